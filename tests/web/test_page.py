"""The converter page in Debian's chromium (headless, through Playwright), served by `minifloat serve`.

Expected numbers come from the worked examples of docs/spec.md#worked-example, typed here, and from the native
`minifloat show` / `minifloat block` JSON: the page must agree with both.
"""
import re
import socket
import urllib.parse
import urllib.request

import pytest


def load(page, url, query=""):
    page.goto(url + query)
    page.wait_for_selector("body.ready", timeout=20000)


def row(page, fmt):
    return page.locator(f'#number-table tr[data-format="{fmt}"]')


def test_worked_conversion_of_0_3(page, server, cli):
    # docs/spec.md#worked-example: 0.3 = 1.2 x 2^-2; e4m3's exponent field is -2 + 7 = 5 = 0101, bf16's
    # -2 + 127 = 125 = 01111101.
    load(page, server)
    page.fill("#x", "0.3")
    assert row(page, "e4m3").locator(".exponent-field").inner_text() == "0101"
    assert row(page, "bf16").locator(".exponent-field").inner_text() == "01111101"
    assert row(page, "e4m3").locator(".stored").inner_text() == "0.3125"
    assert row(page, "e2m1").locator(".stored").inner_text() == "0.5"
    # Every row against the native command.
    native = cli("show", "0.3", "--formats",
                 "f32,bf16,f16,e4m3,e5m2,e3m2,e2m3,e2m1,ue8m0,ue4m3,e4m3fnuz,e5m2fnuz,e4m3b11fnuz,e3m4,e4m3ieee,ue5m3",
                 "--json")
    for f in native["formats"]:
        r = row(page, f["format"])
        assert r.locator(".code").inner_text() == f["code"], f["format"]
        assert r.locator(".exponent-field").inner_text() == f["exponent_field"], f["format"]
        assert r.locator(".stored").inner_text() == f["stored_text"], f["format"]
    # Mantissa fields are amber strips: the color comes from the stylesheet, the bits from the module.
    mant = row(page, "bf16").locator(".strip .mantissa")
    assert mant.inner_text() == native["formats"][1]["mantissa_field"]
    assert mant.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(240, 162, 2)"
    assert "x=0.3" in page.url


def test_f32_bits_input(page, server):
    load(page, server, "?x=0x3e99999a")
    assert "0x3e99999a" in page.inner_text("#number-summary")
    assert row(page, "e4m3").locator(".exponent-field").inner_text() == "0101"


def test_e2m1_scale_example(page, server):
    # docs/spec.md#worked-example: 0.3 / 0.0625 = 4.8, the nearest e2m1 code is 4, and 4 x 0.0625 = 0.25: 17 % error
    # instead of 67 %.
    load(page, server, "?x=0.3")
    assert row(page, "e2m1").locator(".error").inner_text() == "66.7 %"
    page.fill("#scale", "0.0625")
    r = row(page, "e2m1")
    assert r.locator(".stored").inner_text() == "4"
    assert r.locator(".value").inner_text() == "0.25"
    assert r.locator(".error").inner_text() == "16.7 %"
    assert "scale=0.0625" in page.url


def test_outlier_in_a_32_value_mxfp4_block(page, server, cli):
    # 32 small values of mixed sizes, then an outlier: the shared scale grows and small values become 0.
    values = [round(0.05 * (i % 7 + 1) * (-1) ** i, 3) for i in range(32)]
    text = ",".join(str(v) for v in values)
    load(page, server)
    page.fill("#values", text)
    page.select_option("#scheme", "mxfp4")
    before = int(page.get_attribute("#block-summary", "data-zeroed"))
    page.fill("#outlier-value", "40")
    page.click("#add-outlier")
    after = int(page.get_attribute("#block-summary", "data-zeroed"))
    native = cli("block", text, "--scheme", "mxfp4", "--outlier", "40", "--json")
    assert before == native["block"]["zeroed"]
    assert after == native["with_outlier"]["zeroed"]
    assert after > before, "the outlier should zero some small values"
    assert page.locator("#block-table tr.became-zero").count() == after
    # The view is a link: the same URL shows the same numbers.
    assert "outlier=40" in page.url and "scheme=mxfp4" in page.url
    link = page.url
    page.goto(link)
    page.wait_for_selector("body.ready")
    assert int(page.get_attribute("#block-summary", "data-zeroed")) == after


@pytest.mark.parametrize("scheme,rule", [("mxfp8", "rceil"), ("nvfp4", ""), ("nvfp4", "4over6"), ("nvfp4-ue5m3", "")])
def test_block_schemes_match_the_command(page, server, cli, scheme, rule):
    values = "0.1,-0.25,0.3,0.02,1.5,-0.7,0.05,2,1e-4,3.5"
    load(page, server, "?" + urllib.parse.urlencode({"block": values, "scheme": scheme, "rule": rule}))
    native = cli("block", values, "--scheme", scheme, *(["--rule", rule] if rule else []), "--json")["block"]
    codes = page.locator("#block-table tbody td.code").all_inner_texts()
    assert codes == [v["code_hex"] for v in native["values"]]
    assert native["scales"][0]["code"] in page.inner_text("#block-summary")


def test_random_fill_gives_32_values(page, server):
    load(page, server)
    page.fill("#count", "32")
    page.click("#fill")
    assert page.locator("#block-table tbody tr").count() == 32
    assert len(urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)["block"][0].split(",")) == 32


def test_bad_input_is_reported(page, server):
    load(page, server, "?x=abc")
    assert "cannot read 'abc'" in page.inner_text("#number-summary")


def test_keyboard_only(page, server):
    load(page, server)
    page.focus("#x")
    page.keyboard.press("Control+A")
    page.keyboard.type("448")
    page.keyboard.press("Tab")  # to the scale field
    page.keyboard.type("2")
    assert row(page, "e4m3").locator(".stored").inner_text() == "224"
    page.focus("#fill")
    page.keyboard.press("Enter")
    assert page.locator("#block-table tbody tr").count() == 32


def test_pictures_and_screenshot(page, server, artifacts):
    load(page, server, "?x=0.3&block=0.1,0.2,0.3&scheme=mxfp4&outlier=40")
    assert page.locator("#panel1 svg rect").count() > 8 * 4
    assert "e2m1 66.7%" in page.text_content("#panel2 svg")
    path = artifacts / "page.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_readable_on_a_phone(browser, server, artifacts):
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    load(page, server, "?x=0.3")
    # Wide tables scroll inside their own box; the page itself does not scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=str(artifacts / "page-phone.png"), full_page=True)
    context.close()


def raw_get(url, path, method="GET"):
    """A request sent as written (urllib would normalise '..' away)."""
    u = urllib.parse.urlparse(url)
    with socket.create_connection((u.hostname, u.port), timeout=5) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head.decode(), body


def test_serve_types_and_refusals(server, site):
    with urllib.request.urlopen(server + "minifloat.wasm") as r:
        assert r.headers["Content-Type"] == "application/wasm"
        assert r.read() == (site / "minifloat.wasm").read_bytes()
    with urllib.request.urlopen(server + "?x=0.3") as r:
        assert r.headers["Content-Type"].startswith("text/html")
    for path in ["/../CMakeLists.txt", "/..%2fCMakeLists.txt", "/%2e%2e/x", "/.inputs", "/nope.js"]:
        status, _, _ = raw_get(server, path)
        assert status == 404, path
    assert raw_get(server, "/", "POST")[0] == 405
    status, head, body = raw_get(server, "/style.css", "HEAD")
    assert status == 200 and body == b"" and re.search(r"Content-Type: text/css", head)
