from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.variant_capacity import VariantCapacity
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    name: str,
    variant_id: str,
    *,
    slo_ms: float | None | Unset = UNSET,
    points: int | Unset = 24,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_slo_ms: float | None | Unset
    if isinstance(slo_ms, Unset):
        json_slo_ms = UNSET
    else:
        json_slo_ms = slo_ms
    params["slo_ms"] = json_slo_ms

    params["points"] = points


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/models/{name}/variants/{variant_id}/capacity".format(name=quote(str(name), safe=""),variant_id=quote(str(variant_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | VariantCapacity | None:
    if response.status_code == 200:
        response_200 = VariantCapacity.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | VariantCapacity]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    variant_id: str,
    *,
    client: AuthenticatedClient | Client,
    slo_ms: float | None | Unset = UNSET,
    points: int | Unset = 24,

) -> Response[ErrorBody | VariantCapacity]:
    """ Variant Capacity

     Predicted mean latency against arrival rate for each concurrency 1..c the variant was profiled
    at (SERF's M/D_interf/c model over its measured service rates μ_i), beside the measured points;
    with `slo_ms`, the highest rate each configuration carries within it. 404 for an unknown model or
    variant, 409 while the variant is not profiled.

    Args:
        name (str): An app or model name.
        variant_id (str):
        slo_ms (float | None | Unset): Latency SLO: report the highest rate meeting it.
        points (int | Unset): Arrival rates per curve, from 0 to 98 % of ρ = 1. Default: 24.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | VariantCapacity]
     """


    kwargs = _get_kwargs(
        name=name,
variant_id=variant_id,
slo_ms=slo_ms,
points=points,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    name: str,
    variant_id: str,
    *,
    client: AuthenticatedClient | Client,
    slo_ms: float | None | Unset = UNSET,
    points: int | Unset = 24,

) -> ErrorBody | VariantCapacity | None:
    """ Variant Capacity

     Predicted mean latency against arrival rate for each concurrency 1..c the variant was profiled
    at (SERF's M/D_interf/c model over its measured service rates μ_i), beside the measured points;
    with `slo_ms`, the highest rate each configuration carries within it. 404 for an unknown model or
    variant, 409 while the variant is not profiled.

    Args:
        name (str): An app or model name.
        variant_id (str):
        slo_ms (float | None | Unset): Latency SLO: report the highest rate meeting it.
        points (int | Unset): Arrival rates per curve, from 0 to 98 % of ρ = 1. Default: 24.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | VariantCapacity
     """


    return sync_detailed(
        name=name,
variant_id=variant_id,
client=client,
slo_ms=slo_ms,
points=points,

    ).parsed

async def asyncio_detailed(
    name: str,
    variant_id: str,
    *,
    client: AuthenticatedClient | Client,
    slo_ms: float | None | Unset = UNSET,
    points: int | Unset = 24,

) -> Response[ErrorBody | VariantCapacity]:
    """ Variant Capacity

     Predicted mean latency against arrival rate for each concurrency 1..c the variant was profiled
    at (SERF's M/D_interf/c model over its measured service rates μ_i), beside the measured points;
    with `slo_ms`, the highest rate each configuration carries within it. 404 for an unknown model or
    variant, 409 while the variant is not profiled.

    Args:
        name (str): An app or model name.
        variant_id (str):
        slo_ms (float | None | Unset): Latency SLO: report the highest rate meeting it.
        points (int | Unset): Arrival rates per curve, from 0 to 98 % of ρ = 1. Default: 24.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | VariantCapacity]
     """


    kwargs = _get_kwargs(
        name=name,
variant_id=variant_id,
slo_ms=slo_ms,
points=points,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    name: str,
    variant_id: str,
    *,
    client: AuthenticatedClient | Client,
    slo_ms: float | None | Unset = UNSET,
    points: int | Unset = 24,

) -> ErrorBody | VariantCapacity | None:
    """ Variant Capacity

     Predicted mean latency against arrival rate for each concurrency 1..c the variant was profiled
    at (SERF's M/D_interf/c model over its measured service rates μ_i), beside the measured points;
    with `slo_ms`, the highest rate each configuration carries within it. 404 for an unknown model or
    variant, 409 while the variant is not profiled.

    Args:
        name (str): An app or model name.
        variant_id (str):
        slo_ms (float | None | Unset): Latency SLO: report the highest rate meeting it.
        points (int | Unset): Arrival rates per curve, from 0 to 98 % of ρ = 1. Default: 24.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | VariantCapacity
     """


    return (await asyncio_detailed(
        name=name,
variant_id=variant_id,
client=client,
slo_ms=slo_ms,
points=points,

    )).parsed
