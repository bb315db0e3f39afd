from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.feedback import Feedback
from ...models.feedback_answer import FeedbackAnswer
from ...models.feedback_item import FeedbackItem
from typing import cast



def _get_kwargs(
    app: str,
    *,
    body: Feedback | FeedbackItem,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/apps/{app}/feedback".format(app=quote(str(app), safe=""),),
    }

    
    if isinstance(body, FeedbackItem):
        _kwargs["json"] = body.to_dict()
    else:
        _kwargs["json"] = body.to_dict()


    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | FeedbackAnswer | None:
    if response.status_code == 200:
        response_200 = FeedbackAnswer.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | FeedbackAnswer]:
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
    body: Feedback | FeedbackItem,

) -> Response[ErrorBody | FeedbackAnswer]:
    """ Give Feedback

     The true class of each row of an earlier query of the app, by the query's `request_id`: one
    (`{query_id, labels}`) or a batch (`{items: [...]}`). It moves the selection's weights (the query's
    user's and the app's) and each model's live accuracy (`infaas_selection_feedback_*` metrics). An
    unknown or expired query id is a 404, a wrong number of labels or a class out of range a 422; a
    refused batch applies nothing.

    Args:
        app (str): An app or model name.
        body (Feedback | FeedbackItem):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | FeedbackAnswer]
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
    body: Feedback | FeedbackItem,

) -> ErrorBody | FeedbackAnswer | None:
    """ Give Feedback

     The true class of each row of an earlier query of the app, by the query's `request_id`: one
    (`{query_id, labels}`) or a batch (`{items: [...]}`). It moves the selection's weights (the query's
    user's and the app's) and each model's live accuracy (`infaas_selection_feedback_*` metrics). An
    unknown or expired query id is a 404, a wrong number of labels or a class out of range a 422; a
    refused batch applies nothing.

    Args:
        app (str): An app or model name.
        body (Feedback | FeedbackItem):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | FeedbackAnswer
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
    body: Feedback | FeedbackItem,

) -> Response[ErrorBody | FeedbackAnswer]:
    """ Give Feedback

     The true class of each row of an earlier query of the app, by the query's `request_id`: one
    (`{query_id, labels}`) or a batch (`{items: [...]}`). It moves the selection's weights (the query's
    user's and the app's) and each model's live accuracy (`infaas_selection_feedback_*` metrics). An
    unknown or expired query id is a 404, a wrong number of labels or a class out of range a 422; a
    refused batch applies nothing.

    Args:
        app (str): An app or model name.
        body (Feedback | FeedbackItem):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | FeedbackAnswer]
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
    body: Feedback | FeedbackItem,

) -> ErrorBody | FeedbackAnswer | None:
    """ Give Feedback

     The true class of each row of an earlier query of the app, by the query's `request_id`: one
    (`{query_id, labels}`) or a batch (`{items: [...]}`). It moves the selection's weights (the query's
    user's and the app's) and each model's live accuracy (`infaas_selection_feedback_*` metrics). An
    unknown or expired query id is a 404, a wrong number of labels or a class out of range a 422; a
    refused batch applies nothing.

    Args:
        app (str): An app or model name.
        body (Feedback | FeedbackItem):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | FeedbackAnswer
     """


    return (await asyncio_detailed(
        app=app,
client=client,
body=body,

    )).parsed
