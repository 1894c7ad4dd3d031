#!/usr/bin/python3
"""pl_slowlink.py LISTEN_PORT TARGET_PORT RATEFILE

A TCP relay on 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT whose
client -> target direction carries at most RATE bytes per second, RATE
read from RATEFILE (0 or a missing file: no limit; re-read every 0.2 s);
target -> client is not limited.  Put between smbaccel and smbd, it makes
smbaccel's flushes slow while the server's answers and break
notifications arrive at once.  Prints READY once listening; runs until
killed."""
import asyncio
import sys

listen, target, ratefile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rate = [0.0]


async def watch_rate():
    while True:
        try:
            rate[0] = float(open(ratefile).read().strip() or 0)
        except (OSError, ValueError):
            rate[0] = 0.0
        await asyncio.sleep(0.2)


async def pump(r, w, limited):
    try:
        while True:
            data = await r.read(8192 if limited and rate[0] else 262144)
            if not data:
                break
            w.write(data)
            await w.drain()
            if limited and rate[0]:
                await asyncio.sleep(len(data) / rate[0])
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            w.close()
        except Exception:
            pass


async def handle(cr, cw):
    try:
        sr, sw = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        cw.close()
        return
    await asyncio.gather(pump(cr, sw, True), pump(sr, cw, False))


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", listen)
    asyncio.ensure_future(watch_rate())
    print("READY", flush=True)
    async with srv:
        await srv.serve_forever()


asyncio.run(main())
