from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_response import ErrorResponse
from ...models.model_ready import ModelReady
from typing import cast



def _get_kwargs(
    m: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v2/models/{m}/ready".format(m=quote(str(m), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorResponse | ModelReady | None:
    if response.status_code == 200:
        response_200 = ModelReady.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorResponse | ModelReady]:
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

) -> Response[ErrorResponse | ModelReady]:
    """ Model Ready

     200 when the model (or, for an app, one of its models) has a ready variant; 400 while not — the
    protocol's "a 4xx status code indicating false" (as Triton answers), not a server error.

    Args:
        m (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | ModelReady]
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

) -> ErrorResponse | ModelReady | None:
    """ Model Ready

     200 when the model (or, for an app, one of its models) has a ready variant; 400 while not — the
    protocol's "a 4xx status code indicating false" (as Triton answers), not a server error.

    Args:
        m (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | ModelReady
     """


    return sync_detailed(
        m=m,
client=client,

    ).parsed

async def asyncio_detailed(
    m: str,
    *,
    client: AuthenticatedClient | Client,

) -> Response[ErrorResponse | ModelReady]:
    """ Model Ready

     200 when the model (or, for an app, one of its models) has a ready variant; 400 while not — the
    protocol's "a 4xx status code indicating false" (as Triton answers), not a server error.

    Args:
        m (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorResponse | ModelReady]
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

) -> ErrorResponse | ModelReady | None:
    """ Model Ready

     200 when the model (or, for an app, one of its models) has a ready variant; 400 while not — the
    protocol's "a 4xx status code indicating false" (as Triton answers), not a server error.

    Args:
        m (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorResponse | ModelReady
     """


    return (await asyncio_detailed(
        m=m,
client=client,

    )).parsed
