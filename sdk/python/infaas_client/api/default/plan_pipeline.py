from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.pipeline import Pipeline
from ...models.plan_ask import PlanAsk
from typing import cast



def _get_kwargs(
    name: str,
    *,
    body: PlanAsk,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/pipelines/{name}/plan".format(name=quote(str(name), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | Pipeline | None:
    if response.status_code == 200:
        response_200 = Pipeline.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | Pipeline]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: PlanAsk,

) -> Response[ErrorBody | Pipeline]:
    """ Plan Pipeline

     Plan the pipeline (InferLine's planner) for an arrival rate: per stage the variant, batch size and
    replicas of least cost whose estimated end-to-end P99 meets the SLO, with its predicted cost and
    P99;
    scale factors come from observed traffic. The plan is stored, applied (instances loaded, each an
    event) and pins the variant of each stage in the pipeline's queries.

    Args:
        name (str): An app or model name.
        body (PlanAsk):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | Pipeline]
     """


    kwargs = _get_kwargs(
        name=name,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: PlanAsk,

) -> ErrorBody | Pipeline | None:
    """ Plan Pipeline

     Plan the pipeline (InferLine's planner) for an arrival rate: per stage the variant, batch size and
    replicas of least cost whose estimated end-to-end P99 meets the SLO, with its predicted cost and
    P99;
    scale factors come from observed traffic. The plan is stored, applied (instances loaded, each an
    event) and pins the variant of each stage in the pipeline's queries.

    Args:
        name (str): An app or model name.
        body (PlanAsk):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | Pipeline
     """


    return sync_detailed(
        name=name,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: PlanAsk,

) -> Response[ErrorBody | Pipeline]:
    """ Plan Pipeline

     Plan the pipeline (InferLine's planner) for an arrival rate: per stage the variant, batch size and
    replicas of least cost whose estimated end-to-end P99 meets the SLO, with its predicted cost and
    P99;
    scale factors come from observed traffic. The plan is stored, applied (instances loaded, each an
    event) and pins the variant of each stage in the pipeline's queries.

    Args:
        name (str): An app or model name.
        body (PlanAsk):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | Pipeline]
     """


    kwargs = _get_kwargs(
        name=name,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: PlanAsk,

) -> ErrorBody | Pipeline | None:
    """ Plan Pipeline

     Plan the pipeline (InferLine's planner) for an arrival rate: per stage the variant, batch size and
    replicas of least cost whose estimated end-to-end P99 meets the SLO, with its predicted cost and
    P99;
    scale factors come from observed traffic. The plan is stored, applied (instances loaded, each an
    event) and pins the variant of each stage in the pipeline's queries.

    Args:
        name (str): An app or model name.
        body (PlanAsk):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | Pipeline
     """


    return (await asyncio_detailed(
        name=name,
client=client,
body=body,

    )).parsed
