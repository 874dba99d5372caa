"""dispatch_api's service: a real HTTP API (aiohttp) that routes a unit to
the nearest of 500 stations. Run on the edge node by services.py:

    python -m workloads.edge_tasks.api_service PORT"""

from __future__ import annotations

import random
import sys

from aiohttp import web

STATIONS = [(random.Random(i).random() * 100, random.Random(-i).random() * 100) for i in range(500)]


async def dispatch(request: web.Request) -> web.Response:
    body = await request.json()
    x, y = float(body["x"]), float(body["y"])
    best = min(range(len(STATIONS)), key=lambda i: (STATIONS[i][0] - x) ** 2 + (STATIONS[i][1] - y) ** 2)
    return web.json_response({"unit": body["unit"], "station": best})


async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def main() -> None:
    app = web.Application()
    app.add_routes([web.post("/dispatch", dispatch), web.get("/health", health)])
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=lambda *_: None, access_log=None)


if __name__ == "__main__":
    main()
