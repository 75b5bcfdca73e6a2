"""A bounded property-based fuzz of every route's parameters (hypothesis, through werkzeug's test client).

Whatever the query, a route answers one of the documented statuses with a JSON error or body, never a
500, never more than 2 MB, in bounded time: parameters are validated before any work is done.
"""
from __future__ import annotations

import json
import time
from urllib.parse import urlencode

import pytest
from conftest import kernel, launch, memory, op, plugin_apps, trace_doc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.test import Client

PREFIX = "/data/plugin/kinetoscope"
ROUTES = ("runs", "status", "summary", "verdict", "ranks", "gaps", "launches", "memory", "stalls", "lanes", "event", "export",
          "compare")
PARAMS = ("span", "run", "device", "cause", "min_us", "start_us", "end_us", "sort", "offset", "limit", "bins", "top",
          "max_points", "width_px", "row", "args", "load",
          "base", "cand", "base_run", "cand_run")
ROUTES += ("tables", "search")  # issue 16
PARAMS += ("by", "filter", "q", "group", "check", "whole", "wait_ms")
ROUTES += ("markdown",)
ROUTES += ("counters",)  # issue 27
PARAMS += ("counters",)
ALLOWED = {200, 400, 404, 405, 409, 422}
MAX_BODY = 2_000_000


@pytest.fixture(scope="module")
def app_and_ids(tmp_path_factory):
    events = [op("ProfilerStep#1", 0, 400, cat="user_annotation"), op("aten::mm", 10, 30), launch(12, 5, 1),
              kernel("k1", 30, 20, 1), launch(150, 5, 2), kernel("k2", 160, 40, 2), memory(11, 1024, total=1024, reserved=2048)]
    with plugin_apps(trace_doc(events), tmp_path_factory.mktemp("fuzz")) as apps_and_sid:
        yield apps_and_sid


def values(sid: str):
    numbers = st.one_of(st.integers(min_value=-(2**70), max_value=2**70).map(str),
                        st.floats(allow_nan=True, allow_infinity=True).map(repr),
                        st.sampled_from(["nan", "inf", "-inf", "1e309", "-0", "0x10", "１２", ""]))
    return st.one_of(numbers, st.just(sid), st.just("run"), st.text(max_size=40),
                     st.text(alphabet="abcdef0123456789", min_size=12, max_size=12),
                     st.text(min_size=1000, max_size=20_000, alphabet=st.characters(codec="utf-8")),
                     st.sampled_from(["../../etc/passwd", "dataloader,host", "host,", "-dur", "<img src=x onerror=1>"]))


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_any_query_gets_a_bounded_documented_answer(app_and_ids, data):
    apps, sid = app_and_ids
    route = data.draw(st.sampled_from(ROUTES))
    params = data.draw(st.dictionaries(st.sampled_from(PARAMS), values(sid), max_size=6))
    if data.draw(st.booleans()):
        params.setdefault("span", sid)
    query = urlencode(params)
    start = time.perf_counter()
    response = Client(apps[f"/{route}"]).get(f"{PREFIX}/{route}?{query}")
    elapsed = time.perf_counter() - start
    body = response.get_data()
    assert response.status_code in ALLOWED, (route, query[:300], body[:300])
    assert len(body) < MAX_BODY and elapsed < 5.0, (route, query[:300], len(body), elapsed)
    if response.mimetype == "application/json":
        json.loads(body)
