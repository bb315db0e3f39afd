from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.event_page import EventPage
from ...models.http_validation_error import HTTPValidationError
from ...models.list_events_kind_type_0 import ListEventsKindType0
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    limit: int | Unset = 100,
    before: int | None | Unset = UNSET,
    model: None | str | Unset = UNSET,
    kind: ListEventsKindType0 | None | Unset = UNSET,
    action: None | str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["limit"] = limit

    json_before: int | None | Unset
    if isinstance(before, Unset):
        json_before = UNSET
    else:
        json_before = before
    params["before"] = json_before

    json_model: None | str | Unset
    if isinstance(model, Unset):
        json_model = UNSET
    else:
        json_model = model
    params["model"] = json_model

    json_kind: None | str | Unset
    if isinstance(kind, Unset):
        json_kind = UNSET
    elif isinstance(kind, ListEventsKindType0):
        json_kind = kind.value
    else:
        json_kind = kind
    params["kind"] = json_kind

    json_action: None | str | Unset
    if isinstance(action, Unset):
        json_action = UNSET
    else:
        json_action = action
    params["action"] = json_action


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/events",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | EventPage | HTTPValidationError | None:
    if response.status_code == 200:
        response_200 = EventPage.from_dict(response.json())



        return response_200

    if response.status_code == 401:
        response_401 = cast(Any, None)
        return response_401

    if response.status_code == 403:
        response_403 = cast(Any, None)
        return response_403

    if response.status_code == 422:
        response_422 = HTTPValidationError.from_dict(response.json())



        return response_422

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | EventPage | HTTPValidationError]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 100,
    before: int | None | Unset = UNSET,
    model: None | str | Unset = UNSET,
    kind: ListEventsKindType0 | None | Unset = UNSET,
    action: None | str | Unset = UNSET,

) -> Response[Any | EventPage | HTTPValidationError]:
    """ List Events

     Scaling decisions and their outcomes, newest first, each with the reason the planner gave.

    Args:
        limit (int | Unset):  Default: 100.
        before (int | None | Unset): page: events older than this id
        model (None | str | Unset):
        kind (ListEventsKindType0 | None | Unset):
        action (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | EventPage | HTTPValidationError]
     """


    kwargs = _get_kwargs(
        limit=limit,
before=before,
model=model,
kind=kind,
action=action,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 100,
    before: int | None | Unset = UNSET,
    model: None | str | Unset = UNSET,
    kind: ListEventsKindType0 | None | Unset = UNSET,
    action: None | str | Unset = UNSET,

) -> Any | EventPage | HTTPValidationError | None:
    """ List Events

     Scaling decisions and their outcomes, newest first, each with the reason the planner gave.

    Args:
        limit (int | Unset):  Default: 100.
        before (int | None | Unset): page: events older than this id
        model (None | str | Unset):
        kind (ListEventsKindType0 | None | Unset):
        action (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | EventPage | HTTPValidationError
     """


    return sync_detailed(
        client=client,
limit=limit,
before=before,
model=model,
kind=kind,
action=action,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 100,
    before: int | None | Unset = UNSET,
    model: None | str | Unset = UNSET,
    kind: ListEventsKindType0 | None | Unset = UNSET,
    action: None | str | Unset = UNSET,

) -> Response[Any | EventPage | HTTPValidationError]:
    """ List Events

     Scaling decisions and their outcomes, newest first, each with the reason the planner gave.

    Args:
        limit (int | Unset):  Default: 100.
        before (int | None | Unset): page: events older than this id
        model (None | str | Unset):
        kind (ListEventsKindType0 | None | Unset):
        action (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | EventPage | HTTPValidationError]
     """


    kwargs = _get_kwargs(
        limit=limit,
before=before,
model=model,
kind=kind,
action=action,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = 100,
    before: int | None | Unset = UNSET,
    model: None | str | Unset = UNSET,
    kind: ListEventsKindType0 | None | Unset = UNSET,
    action: None | str | Unset = UNSET,

) -> Any | EventPage | HTTPValidationError | None:
    """ List Events

     Scaling decisions and their outcomes, newest first, each with the reason the planner gave.

    Args:
        limit (int | Unset):  Default: 100.
        before (int | None | Unset): page: events older than this id
        model (None | str | Unset):
        kind (ListEventsKindType0 | None | Unset):
        action (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | EventPage | HTTPValidationError
     """


    return (await asyncio_detailed(
        client=client,
limit=limit,
before=before,
model=model,
kind=kind,
action=action,

    )).parsed
