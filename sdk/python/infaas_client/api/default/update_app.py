from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.app import App
from ...models.app_update import AppUpdate
from ...models.error_body import ErrorBody
from typing import cast



def _get_kwargs(
    app: str,
    *,
    body: AppUpdate,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/apps/{app}".format(app=quote(str(app), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> App | ErrorBody | None:
    if response.status_code == 200:
        response_200 = App.from_dict(response.json())



        return response_200

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())



        return response_413

    if response.status_code == 422:
        response_422 = ErrorBody.from_dict(response.json())



        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[App | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    app: str,
    *,
    client: AuthenticatedClient | Client,
    body: AppUpdate,

) -> Response[App | ErrorBody]:
    """ Update App

     Change an app's default requirements, SLO-miss policy, cache and cost/latency preference.

    Args:
        app (str): An app or model name.
        body (AppUpdate): Fields of an app that may change; omitted fields stay as they are.
            `null` clears the defaults
            (latency, accuracy, output); the other fields always hold a value, so `null` there is a
            422.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[App | ErrorBody]
     """


    kwargs = _get_kwargs(
        app=app,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    app: str,
    *,
    client: AuthenticatedClient | Client,
    body: AppUpdate,

) -> App | ErrorBody | None:
    """ Update App

     Change an app's default requirements, SLO-miss policy, cache and cost/latency preference.

    Args:
        app (str): An app or model name.
        body (AppUpdate): Fields of an app that may change; omitted fields stay as they are.
            `null` clears the defaults
            (latency, accuracy, output); the other fields always hold a value, so `null` there is a
            422.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        App | ErrorBody
     """


    return sync_detailed(
        app=app,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    app: str,
    *,
    client: AuthenticatedClient | Client,
    body: AppUpdate,

) -> Response[App | ErrorBody]:
    """ Update App

     Change an app's default requirements, SLO-miss policy, cache and cost/latency preference.

    Args:
        app (str): An app or model name.
        body (AppUpdate): Fields of an app that may change; omitted fields stay as they are.
            `null` clears the defaults
            (latency, accuracy, output); the other fields always hold a value, so `null` there is a
            422.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[App | ErrorBody]
     """


    kwargs = _get_kwargs(
        app=app,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    app: str,
    *,
    client: AuthenticatedClient | Client,
    body: AppUpdate,

) -> App | ErrorBody | None:
    """ Update App

     Change an app's default requirements, SLO-miss policy, cache and cost/latency preference.

    Args:
        app (str): An app or model name.
        body (AppUpdate): Fields of an app that may change; omitted fields stay as they are.
            `null` clears the defaults
            (latency, accuracy, output); the other fields always hold a value, so `null` there is a
            422.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        App | ErrorBody
     """


    return (await asyncio_detailed(
        app=app,
client=client,
body=body,

    )).parsed
