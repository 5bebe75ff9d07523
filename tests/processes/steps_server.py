"""A three-step tool that logs every step it runs and blocks in step two until released."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastmcp import Context, FastMCP

from fastmcp_temporal import Steps

mcp = FastMCP("steps")


@mcp.tool(task=True)
async def three_steps(marker_dir: str, ctx: Context) -> str:
    markers = Path(marker_dir)
    steps = Steps(ctx)

    def log(name: str) -> None:
        with (markers / "runs.log").open("a") as runs:
            runs.write(name + "\n")

    async def one() -> str:
        log("one")
        return "one"

    async def two() -> str:
        log("two")
        (markers / "started-two").write_text("")
        while not (markers / "release").exists():
            await asyncio.sleep(0.05)
        return "two"

    async def three() -> str:
        log("three")
        return "three"

    first = await steps.run("one", one)
    second = await steps.run("two", two)
    third = await steps.run("three", three)
    return "+".join([first, second, third])
