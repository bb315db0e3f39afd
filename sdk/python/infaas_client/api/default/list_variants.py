from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.list_variants_sort import ListVariantsSort
from ...models.list_variants_status_type_0 import ListVariantsStatusType0
from ...models.variant import Variant
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    name: str,
    *,
    hardware: None | str | Unset = UNSET,
    status: ListVariantsStatusType0 | None | Unset = UNSET,
    precision: None | str | Unset = UNSET,
    min_accuracy: float | None | Unset = UNSET,
    max_latency_ms: float | None | Unset = UNSET,
    max_cost_per_query: float | None | Unset = UNSET,
    include_dominated: bool | Unset = True,
    batch: int | Unset = 1,
    sort: ListVariantsSort | Unset = ListVariantsSort.LATENCY,
    descending: bool | Unset = False,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_hardware: None | str | Unset
    if isinstance(hardware, Unset):
        json_hardware = UNSET
    else:
        json_hardware = hardware
    params["hardware"] = json_hardware

    json_status: None | str | Unset
    if isinstance(status, Unset):
        json_status = UNSET
    elif isinstance(status, ListVariantsStatusType0):
        json_status = status.value
    else:
        json_status = status
    params["status"] = json_status

    json_precision: None | str | Unset
    if isinstance(precision, Unset):
        json_precision = UNSET
    else:
        json_precision = precision
    params["precision"] = json_precision

    json_min_accuracy: float | None | Unset
    if isinstance(min_accuracy, Unset):
        json_min_accuracy = UNSET
    else:
        json_min_accuracy = min_accuracy
    params["min_accuracy"] = json_min_accuracy

    json_max_latency_ms: float | None | Unset
    if isinstance(max_latency_ms, Unset):
        json_max_latency_ms = UNSET
    else:
        json_max_latency_ms = max_latency_ms
    params["max_latency_ms"] = json_max_latency_ms

    json_max_cost_per_query: float | None | Unset
    if isinstance(max_cost_per_query, Unset):
        json_max_cost_per_query = UNSET
    else:
        json_max_cost_per_query = max_cost_per_query
    params["max_cost_per_query"] = json_max_cost_per_query

    params["include_dominated"] = include_dominated

    params["batch"] = batch

    json_sort: str | Unset = UNSET
    if not isinstance(sort, Unset):
        json_sort = sort.value

    params["sort"] = json_sort

    params["descending"] = descending


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/models/{name}/variants".format(name=quote(str(name), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | list[Variant] | None:
    if response.status_code == 200:
        response_200 = []
        _response_200 = response.json()
        for response_200_item_data in (_response_200):
            response_200_item = Variant.from_dict(response_200_item_data)



            response_200.append(response_200_item)

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | list[Variant]]:
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
    hardware: None | str | Unset = UNSET,
    status: ListVariantsStatusType0 | None | Unset = UNSET,
    precision: None | str | Unset = UNSET,
    min_accuracy: float | None | Unset = UNSET,
    max_latency_ms: float | None | Unset = UNSET,
    max_cost_per_query: float | None | Unset = UNSET,
    include_dominated: bool | Unset = True,
    batch: int | Unset = 1,
    sort: ListVariantsSort | Unset = ListVariantsSort.LATENCY,
    descending: bool | Unset = False,

) -> Response[ErrorBody | list[Variant]]:
    """ List Variants

     The model's variants with their profiles: filter by hardware, status, precision, accuracy,
    latency at a batch size and cost; sort by latency (at `batch`), accuracy, cost, throughput,
    memory or load time. Dominated variants are marked `dominated` (kept, skipped by selection).

    Args:
        name (str): An app or model name.
        hardware (None | str | Unset): Only this hardware kind (cpu, cuda, neuron).
        status (ListVariantsStatusType0 | None | Unset):
        precision (None | str | Unset): fp32, fp16, int8-dynamic, int8-static.
        min_accuracy (float | None | Unset):
        max_latency_ms (float | None | Unset): p50 at `batch` at most this.
        max_cost_per_query (float | None | Unset):
        include_dominated (bool | Unset):  Default: True.
        batch (int | Unset): Batch size the latency filter and sort use. Default: 1.
        sort (ListVariantsSort | Unset):  Default: ListVariantsSort.LATENCY.
        descending (bool | Unset):  Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | list[Variant]]
     """


    kwargs = _get_kwargs(
        name=name,
hardware=hardware,
status=status,
precision=precision,
min_accuracy=min_accuracy,
max_latency_ms=max_latency_ms,
max_cost_per_query=max_cost_per_query,
include_dominated=include_dominated,
batch=batch,
sort=sort,
descending=descending,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    hardware: None | str | Unset = UNSET,
    status: ListVariantsStatusType0 | None | Unset = UNSET,
    precision: None | str | Unset = UNSET,
    min_accuracy: float | None | Unset = UNSET,
    max_latency_ms: float | None | Unset = UNSET,
    max_cost_per_query: float | None | Unset = UNSET,
    include_dominated: bool | Unset = True,
    batch: int | Unset = 1,
    sort: ListVariantsSort | Unset = ListVariantsSort.LATENCY,
    descending: bool | Unset = False,

) -> ErrorBody | list[Variant] | None:
    """ List Variants

     The model's variants with their profiles: filter by hardware, status, precision, accuracy,
    latency at a batch size and cost; sort by latency (at `batch`), accuracy, cost, throughput,
    memory or load time. Dominated variants are marked `dominated` (kept, skipped by selection).

    Args:
        name (str): An app or model name.
        hardware (None | str | Unset): Only this hardware kind (cpu, cuda, neuron).
        status (ListVariantsStatusType0 | None | Unset):
        precision (None | str | Unset): fp32, fp16, int8-dynamic, int8-static.
        min_accuracy (float | None | Unset):
        max_latency_ms (float | None | Unset): p50 at `batch` at most this.
        max_cost_per_query (float | None | Unset):
        include_dominated (bool | Unset):  Default: True.
        batch (int | Unset): Batch size the latency filter and sort use. Default: 1.
        sort (ListVariantsSort | Unset):  Default: ListVariantsSort.LATENCY.
        descending (bool | Unset):  Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | list[Variant]
     """


    return sync_detailed(
        name=name,
client=client,
hardware=hardware,
status=status,
precision=precision,
min_accuracy=min_accuracy,
max_latency_ms=max_latency_ms,
max_cost_per_query=max_cost_per_query,
include_dominated=include_dominated,
batch=batch,
sort=sort,
descending=descending,

    ).parsed

async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    hardware: None | str | Unset = UNSET,
    status: ListVariantsStatusType0 | None | Unset = UNSET,
    precision: None | str | Unset = UNSET,
    min_accuracy: float | None | Unset = UNSET,
    max_latency_ms: float | None | Unset = UNSET,
    max_cost_per_query: float | None | Unset = UNSET,
    include_dominated: bool | Unset = True,
    batch: int | Unset = 1,
    sort: ListVariantsSort | Unset = ListVariantsSort.LATENCY,
    descending: bool | Unset = False,

) -> Response[ErrorBody | list[Variant]]:
    """ List Variants

     The model's variants with their profiles: filter by hardware, status, precision, accuracy,
    latency at a batch size and cost; sort by latency (at `batch`), accuracy, cost, throughput,
    memory or load time. Dominated variants are marked `dominated` (kept, skipped by selection).

    Args:
        name (str): An app or model name.
        hardware (None | str | Unset): Only this hardware kind (cpu, cuda, neuron).
        status (ListVariantsStatusType0 | None | Unset):
        precision (None | str | Unset): fp32, fp16, int8-dynamic, int8-static.
        min_accuracy (float | None | Unset):
        max_latency_ms (float | None | Unset): p50 at `batch` at most this.
        max_cost_per_query (float | None | Unset):
        include_dominated (bool | Unset):  Default: True.
        batch (int | Unset): Batch size the latency filter and sort use. Default: 1.
        sort (ListVariantsSort | Unset):  Default: ListVariantsSort.LATENCY.
        descending (bool | Unset):  Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | list[Variant]]
     """


    kwargs = _get_kwargs(
        name=name,
hardware=hardware,
status=status,
precision=precision,
min_accuracy=min_accuracy,
max_latency_ms=max_latency_ms,
max_cost_per_query=max_cost_per_query,
include_dominated=include_dominated,
batch=batch,
sort=sort,
descending=descending,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    hardware: None | str | Unset = UNSET,
    status: ListVariantsStatusType0 | None | Unset = UNSET,
    precision: None | str | Unset = UNSET,
    min_accuracy: float | None | Unset = UNSET,
    max_latency_ms: float | None | Unset = UNSET,
    max_cost_per_query: float | None | Unset = UNSET,
    include_dominated: bool | Unset = True,
    batch: int | Unset = 1,
    sort: ListVariantsSort | Unset = ListVariantsSort.LATENCY,
    descending: bool | Unset = False,

) -> ErrorBody | list[Variant] | None:
    """ List Variants

     The model's variants with their profiles: filter by hardware, status, precision, accuracy,
    latency at a batch size and cost; sort by latency (at `batch`), accuracy, cost, throughput,
    memory or load time. Dominated variants are marked `dominated` (kept, skipped by selection).

    Args:
        name (str): An app or model name.
        hardware (None | str | Unset): Only this hardware kind (cpu, cuda, neuron).
        status (ListVariantsStatusType0 | None | Unset):
        precision (None | str | Unset): fp32, fp16, int8-dynamic, int8-static.
        min_accuracy (float | None | Unset):
        max_latency_ms (float | None | Unset): p50 at `batch` at most this.
        max_cost_per_query (float | None | Unset):
        include_dominated (bool | Unset):  Default: True.
        batch (int | Unset): Batch size the latency filter and sort use. Default: 1.
        sort (ListVariantsSort | Unset):  Default: ListVariantsSort.LATENCY.
        descending (bool | Unset):  Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | list[Variant]
     """


    return (await asyncio_detailed(
        name=name,
client=client,
hardware=hardware,
status=status,
precision=precision,
min_accuracy=min_accuracy,
max_latency_ms=max_latency_ms,
max_cost_per_query=max_cost_per_query,
include_dominated=include_dominated,
batch=batch,
sort=sort,
descending=descending,

    )).parsed
