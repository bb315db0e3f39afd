from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_response import ErrorResponse
from ...models.model_metadata import ModelMetadata
from typing import cast



def _get_kwargs(
    m: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v2/models/{m}".format(m=quote(str(m), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorResponse | ModelMetadata | None:
    if response.status_code == 200:
        response_200 = ModelMetadata.from_dict(response.json())



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

    if response.status_code == 422:
        response_422 = ErrorResponse.from_dict(response.json())



        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorResponse | ModelMetadata]:
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

) -> Response[ErrorResponse | ModelMetadata]:
    """ Model Metadata

     A model's inputs and outputs; for an app, those of its models (the first one's when they differ).

    Args:
        m (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | ModelMetadata]
     """


    kwargs = _get_kwargs(
        m=m,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    m: str,
    *,
    client: AuthenticatedClient | Client,

) -> ErrorResponse | ModelMetadata | None:
    """ Model Metadata

     A model's inputs and outputs; for an app, those of its models (the first one's when they differ).

    Args:
        m (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | ModelMetadata
     """


    return sync_detailed(
        m=m,
client=client,

    ).parsed

async def asyncio_detailed(
    m: str,
    *,
    client: AuthenticatedClient | Client,

) -> Response[ErrorResponse | ModelMetadata]:
    """ Model Metadata

     A model's inputs and outputs; for an app, those of its models (the first one's when they differ).

    Args:
        m (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | ModelMetadata]
     """


    kwargs = _get_kwargs(
        m=m,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    m: str,
    *,
    client: AuthenticatedClient | Client,

) -> ErrorResponse | ModelMetadata | None:
    """ Model Metadata

     A model's inputs and outputs; for an app, those of its models (the first one's when they differ).

    Args:
        m (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | ModelMetadata
     """


    return (await asyncio_detailed(
        m=m,
client=client,

    )).parsed
