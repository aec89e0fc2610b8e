"""The shared recorded-response server itself."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from recorded_server import RecordedServer


def fetch(url, method="GET", data=None):
    req = urllib.request.Request(url, method=method, data=data)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_routes_query_specificity_sequences_and_recording(tmp_path):
    with RecordedServer() as srv:
        srv.add("GET", "/v1/items", body={"items": [1], "next": "{{base_url}}/v1/items?page=2"})
        srv.add("GET", "/v1/items", query={"page": 2}, body={"items": [2]})
        srv.add("DELETE", "/v1/items/*", responses=[{"status": 503}, {"status": 204}])
        status, _, body = fetch(srv.url + "/v1/items?x=1")
        page1 = json.loads(body)
        assert status == 200 and page1["next"] == srv.url + "/v1/items?page=2"
        assert json.loads(fetch(page1["next"])[2]) == {"items": [2]}
        assert fetch(srv.url + "/v1/items/7", "DELETE")[0] == 503
        assert fetch(srv.url + "/v1/items/7", "DELETE")[0] == 204
        assert fetch(srv.url + "/v1/items/7", "DELETE")[0] == 204  # last one repeats
        assert fetch(srv.url + "/nope", "POST", b'{"a": 1}')[0] == 404
        assert srv.paths("DELETE") == ["/v1/items/7"] * 3
        assert srv.calls("GET")[1].query == {"page": "2"}
        assert [r.path for r in srv.unmatched] == ["/nope"]
        assert srv.unmatched[0].json() == {"a": 1}


def test_lro_and_fixture_file(tmp_path):
    fixture = tmp_path / "f.json"
    fixture.write_text(json.dumps({"routes": [
        {"method": "GET", "path": "/a", "body": {"ok": True}},
        {"method": "POST", "path": "/jobs", "lro": {"header": "Location", "polls": 2,
                                                    "done": {"state": "done"}}},
    ]}))
    with RecordedServer() as srv:
        srv.load(fixture)
        assert json.loads(fetch(srv.url + "/a")[2]) == {"ok": True}
        status, headers, _ = fetch(srv.url + "/jobs", "POST", b"{}")
        assert status == 202 and headers["Location"].startswith(srv.url + "/_lro/")
        bodies = [json.loads(fetch(headers["Location"])[2]) for _ in range(3)]
        assert bodies == [{"status": "InProgress"}] * 2 + [{"state": "done"}]
