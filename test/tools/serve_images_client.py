"""Drives tfm-serve's /v1/images/generations with Python's HTTP client and
prints one line per check for FileCheck (tfm-serve-images.test).

  serve_images_client.py TFM_SERVE LIBRARY KEY REFERENCES...

Starts `TFM_SERVE LIBRARY --port 0 --api-key KEY --timeout 1` on the Stable
Diffusion fixture. REFERENCES are the PNGs the compiled executable wrote
(see the test's RUN lines): the served images must hold the same pixels
(decoded here with zlib: no PIL in CI) and be the same bytes. Then a
generation that takes longer than --timeout (answered, not cut off), the
refusals, and the API key.
"""

import base64
import http.client
import json
import sys
import threading
import time
import zlib

from serve_process import start

KEY = None


def post(port, body, key="right", timeout=120):
    """POSTs `body` as JSON; the status and the parsed response (or its
    text when it is not JSON)."""
    connection = http.client.HTTPConnection("127.0.0.1", port,
                                            timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = "Bearer " + (KEY if key == "right" else key)
    connection.request("POST", "/v1/images/generations", json.dumps(body),
                       headers)
    response = connection.getresponse()
    payload = response.read().decode()
    connection.close()
    try:
        return response.status, json.loads(payload)
    except ValueError:
        return response.status, payload


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def decode_png(data):
    """(width, height, bit depth, color type, pixel rows as bytes) of a
    non-interlaced 8-bit PNG, its filters undone."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, header = 8, b"", None
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        crc = int.from_bytes(data[at + 8 + length:at + 12 + length], "big")
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind}"
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width = int.from_bytes(header[0:4], "big")
    height = int.from_bytes(header[4:8], "big")
    depth, color, interlace = header[8], header[9], header[12]
    assert depth == 8 and interlace == 0
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    stride = width * channels
    raw = zlib.decompress(idat)
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            line[x] = (line[x] + [0, left, up, (left + up) // 2,
                                  paeth(left, up, corner)][kind]) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, depth, color, b"".join(rows)


def images_of(payload):
    return [base64.b64decode(item["b64_json"])
            for item in payload["data"]]


def message(payload):
    return payload["error"]["message"] if isinstance(payload, dict) else payload


def main():
    global KEY
    serve, library, KEY = sys.argv[1:4]
    references = [open(path, "rb").read() for path in sys.argv[4:]]
    server, port = start(serve, library, "--api-key", KEY, "--timeout", "1")
    try:
        # Two images of one request: seeds 7 and 8, what the executable
        # draws for --seed 7 and --seed 8 with the same knobs.
        before = time.time()
        status, payload = post(port, {
            "prompt": "a red cube on a wooden table", "n": 2,
            "size": "96x64", "response_format": "b64_json", "steps": 2,
            "guidance_scale": 7.5, "seed": 7, "scheduler": "euler",
            "negative_prompt": "blurry", "model": "sd", "user": "lit"})
        created = payload.get("created", 0) if status == 200 else 0
        pngs = images_of(payload) if status == 200 else []
        print(f"n=2: {status} {len(pngs)} images, created now: "
              f"{abs(created - before) < 60}, keys {sorted(payload)}")
        for i, png in enumerate(pngs):
            width, height, depth, color, pixels = decode_png(png)
            expected = decode_png(references[i])[4]
            print(f"image {i}: {width}x{height} depth {depth} color type "
                  f"{color}, pixels equal the executable's: "
                  f"{pixels == expected}, same bytes: {png == references[i]}")
        if len(pngs) == 2:
            print("the two seeds differ:",
                  decode_png(pngs[0])[4] != decode_png(pngs[1])[4])

        # Concurrent requests wait their turn; each gets its own image.
        seven = dict(prompt="a red cube on a wooden table", steps=2,
                     seed=7, scheduler="euler", negative_prompt="blurry")
        answers = [None] * 3
        def draw(i):
            answers[i] = post(port, dict(seven, seed=7 + i % 2))
        threads = [threading.Thread(target=draw, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print("concurrent:", [status for status, _ in answers],
              "each the executable's:",
              all(images_of(payload)[0] == references[i % 2]
                  for i, (_, payload) in enumerate(answers)))

        # The defaults (the folder's scheduler, guidance 7.5, seed 0) are
        # the executable's.
        status, payload = post(port, {"prompt": "a red cube on a wooden "
                                                "table", "steps": 2})
        same = status == 200 and (decode_png(images_of(payload)[0])[4] ==
                                  decode_png(references[2])[4])
        print(f"defaults: {status}, pixels equal the executable's: {same}")

        # Far longer than --timeout 1: the connection is not closed as idle
        # while its images are drawn or while it waits its turn
        # (libmicrohttpd counts whole seconds, so a wait under 2 s would
        # prove nothing). How long one long request takes depends on the
        # machine, so as many are sent at once as make the last one's wait
        # more than 3 s.
        long_request = {"prompt": "a long wait", "n": 4, "steps": 150}
        before = time.time()
        waits = [post(port, long_request) + (time.time() - before,)]
        queued = min(16, int(3 / max(waits[0][2], 0.05)) + 1)
        if waits[0][2] <= 3 and waits[0][0] == 200:
            answers = [None] * queued
            def wait(i):
                started = time.time()
                answers[i] = post(port, long_request) + (time.time() - started,)
            threads = [threading.Thread(target=wait, args=(i,))
                       for i in range(queued)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            waits += answers
        statuses = sorted({status for status, _, _ in waits})
        counts = sorted({len(images_of(payload)) if status == 200
                         else message(payload) for status, payload, _ in waits})
        print(f"longer than --timeout: {statuses} {counts} images each, "
              f"the longest wait more than 2 s: "
              f"{max(took for _, _, took in waits) > 2}")

        for label, body in [
                ("size", {"prompt": "x", "size": "512x512"}),
                ("url", {"prompt": "x", "response_format": "url"}),
                ("unknown field", {"prompt": "x", "quality": "hd"}),
                ("scheduler", {"prompt": "x", "scheduler": "k_lms"}),
                ("n=0", {"prompt": "x", "n": 0}),
                ("no prompt", {"n": 1}),
                ("steps", {"prompt": "x", "steps": 151}),
                ("another model", {"prompt": "x", "model": "dall-e-3"})]:
            status, payload = post(port, body)
            print(f"refused, {label}: {status} "
                  f"{payload['error']['param']}: {message(payload)}")
        for label, key in [("no key", None), ("wrong key", "sk-wrong")]:
            status, payload = post(port, {"prompt": "x"}, key=key)
            print(f"{label}: {status} {payload['error']['code']}: "
                  f"{message(payload)}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
