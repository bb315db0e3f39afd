from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.pipeline import Pipeline
from ...models.pipeline_create import PipelineCreate
from typing import cast



def _get_kwargs(
    *,
    body: PipelineCreate,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/pipelines",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | Pipeline | None:
    if response.status_code == 201:
        response_201 = Pipeline.from_dict(response.json())



        return response_201

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | Pipeline]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: PipelineCreate,

) -> Response[ErrorBody | Pipeline]:
    """ Create Pipeline

     Register a pipeline: stages over the app's models, edges that say how one stage's outputs become
    the next one's inputs (optionally only the rows of some predicted classes), an end-to-end P99 SLO.
    Unknown models, mismatched shapes or dtypes and cycles are refused (422) and nothing is stored.
    With `rate_qps`, the pipeline is planned for that rate at once (as `POST .../plan`); a plan that
    cannot be made leaves the pipeline stored and says why in `plan_error`.

    Args:
        body (PipelineCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | Pipeline]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient | Client,
    body: PipelineCreate,

) -> ErrorBody | Pipeline | None:
    """ Create Pipeline

     Register a pipeline: stages over the app's models, edges that say how one stage's outputs become
    the next one's inputs (optionally only the rows of some predicted classes), an end-to-end P99 SLO.
    Unknown models, mismatched shapes or dtypes and cycles are refused (422) and nothing is stored.
    With `rate_qps`, the pipeline is planned for that rate at once (as `POST .../plan`); a plan that
    cannot be made leaves the pipeline stored and says why in `plan_error`.

    Args:
        body (PipelineCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | Pipeline
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: PipelineCreate,

) -> Response[ErrorBody | Pipeline]:
    """ Create Pipeline

     Register a pipeline: stages over the app's models, edges that say how one stage's outputs become
    the next one's inputs (optionally only the rows of some predicted classes), an end-to-end P99 SLO.
    Unknown models, mismatched shapes or dtypes and cycles are refused (422) and nothing is stored.
    With `rate_qps`, the pipeline is planned for that rate at once (as `POST .../plan`); a plan that
    cannot be made leaves the pipeline stored and says why in `plan_error`.

    Args:
        body (PipelineCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | Pipeline]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: PipelineCreate,

) -> ErrorBody | Pipeline | None:
    """ Create Pipeline

     Register a pipeline: stages over the app's models, edges that say how one stage's outputs become
    the next one's inputs (optionally only the rows of some predicted classes), an end-to-end P99 SLO.
    Unknown models, mismatched shapes or dtypes and cycles are refused (422) and nothing is stored.
    With `rate_qps`, the pipeline is planned for that rate at once (as `POST .../plan`); a plan that
    cannot be made leaves the pipeline stored and says why in `plan_error`.

    Args:
        body (PipelineCreate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | Pipeline
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
