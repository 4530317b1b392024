"""weather: an LLM-callable tool, and a deferred one a loader tool activates.

`weather` is advertised to the model from the start. `forecast` is
registered deferred: the model sees it only after it calls `load_forecast`,
whose result names it in `activate_tools`. `/weather <city>` shows the same
report without a model. The data is made up (stable per city), so the example
runs offline.
"""

from __future__ import annotations

import sys
import zlib

try:
    from zot_ext import Extension, ToolResult, display, error
except ImportError:
    sys.stderr.write("weather: the zot_ext package is missing; run `pip install <zot checkout>/sdk/python`\n")
    sys.exit(1)

ext = Extension("weather", "1.0.0")

CONDITIONS = ["sunny", "partly cloudy", "overcast", "fog", "light rain", "showers", "thunderstorms", "snow"]
KNOWN = {
    "berlin": (16, "fog"),
    "paris": (19, "sunny"),
    "london": (14, "light rain"),
    "tokyo": (22, "partly cloudy"),
}

CITY = {"type": "string", "description": "City name, e.g. Berlin"}


def conditions(city: str, day: int = 0) -> tuple[int, str]:
    """Made-up but stable weather for `city`, `day` days from today."""
    key = city.strip().lower()
    if day == 0 and key in KNOWN:
        return KNOWN[key]
    seed = zlib.crc32(f"{key}/{day}".encode())
    return seed % 30 - 2, CONDITIONS[(seed >> 8) % len(CONDITIONS)]


def report(city: str) -> str:
    temp, sky = conditions(city)
    return f"{city.strip()}: {temp}°C, {sky}"


def city_arg(args: dict) -> str:
    city = args.get("city") if isinstance(args, dict) else None
    if not isinstance(city, str) or not city.strip():
        raise ValueError('"city" must be a non-empty string')
    return city


@ext.tool(
    "weather",
    "Get the current weather for a city.",
    schema={"type": "object", "properties": {"city": CITY}, "required": ["city"]},
)
def weather(args: dict) -> str:
    return report(city_arg(args))


@ext.tool(
    "load_forecast", "Enable the multi-day forecast tool (`forecast`). Call it before asking for a forecast."
)
def load_forecast(args: dict) -> ToolResult:
    return ToolResult.text("The forecast tool is now available.", activate_tools=["forecast"])


@ext.tool(
    "forecast",
    "Daily forecast for a city, up to 7 days.",
    schema={
        "type": "object",
        "properties": {"city": CITY, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city"],
    },
    deferred=True,
)
def forecast(args: dict) -> str | ToolResult:
    city = city_arg(args)
    days = args.get("days", 3)
    if not isinstance(days, int) or not 1 <= days <= 7:
        return ToolResult.error('"days" must be an integer from 1 to 7')
    lines = [f"{city.strip()}, next {days} day(s):"]
    for day in range(1, days + 1):
        temp, sky = conditions(city, day)
        lines.append(f"- day {day}: {temp}°C, {sky}")
    return "\n".join(lines)


@ext.command("weather", "current weather for a city (no model call)")
def weather_command(args: str):
    if not args:
        return error("usage: /weather <city>")
    return display(report(args))


if __name__ == "__main__":
    ext.run()
