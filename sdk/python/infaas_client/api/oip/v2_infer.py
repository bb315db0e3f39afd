from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_response import ErrorResponse
from ...models.inference_request import InferenceRequest
from ...models.inference_response import InferenceResponse
from typing import cast



def _get_kwargs(
    m: str,
    *,
    body: InferenceRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v2/models/{m}/infer".format(m=quote(str(m), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorResponse | InferenceResponse | None:
    if response.status_code == 200:
        response_200 = InferenceResponse.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorResponse.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorResponse.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorResponse.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = ErrorResponse.from_dict(response.json())



        return response_404

    if response.status_code == 413:
        response_413 = ErrorResponse.from_dict(response.json())



        return response_413

    if response.status_code == 422:
        response_422 = ErrorResponse.from_dict(response.json())



        return response_422

    if response.status_code == 429:
        response_429 = ErrorResponse.from_dict(response.json())



        return response_429

    if response.status_code == 503:
        response_503 = ErrorResponse.from_dict(response.json())



        return response_503

    if response.status_code == 504:
        response_504 = ErrorResponse.from_dict(response.json())



        return response_504

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorResponse | InferenceResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    m: str,
    *,
    client: AuthenticatedClient | Client,
    body: InferenceRequest,

) -> Response[ErrorResponse | InferenceResponse]:
    """ Infer

     Inference on a model (named-model query) or an app (model-less query, requirements in
    `parameters`). Tensors in JSON or, with `Inference-Header-Content-Length`, as binary data.

    Args:
        m (str):
        body (InferenceRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | InferenceResponse]
     """


    kwargs = _get_kwargs(
        m=m,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    m: str,
    *,
    client: AuthenticatedClient | Client,
    body: InferenceRequest,

) -> ErrorResponse | InferenceResponse | None:
    """ Infer

     Inference on a model (named-model query) or an app (model-less query, requirements in
    `parameters`). Tensors in JSON or, with `Inference-Header-Content-Length`, as binary data.

    Args:
        m (str):
        body (InferenceRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | InferenceResponse
     """


    return sync_detailed(
        m=m,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    m: str,
    *,
    client: AuthenticatedClient | Client,
    body: InferenceRequest,

) -> Response[ErrorResponse | InferenceResponse]:
    """ Infer

     Inference on a model (named-model query) or an app (model-less query, requirements in
    `parameters`). Tensors in JSON or, with `Inference-Header-Content-Length`, as binary data.

    Args:
        m (str):
        body (InferenceRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | InferenceResponse]
     """


    kwargs = _get_kwargs(
        m=m,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    m: str,
    *,
    client: AuthenticatedClient | Client,
    body: InferenceRequest,

) -> ErrorResponse | InferenceResponse | None:
    """ Infer

     Inference on a model (named-model query) or an app (model-less query, requirements in
    `parameters`). Tensors in JSON or, with `Inference-Header-Content-Length`, as binary data.

    Args:
        m (str):
        body (InferenceRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | InferenceResponse
     """


    return (await asyncio_detailed(
        m=m,
client=client,
body=body,

    )).parsed
