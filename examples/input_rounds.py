"""2026-07-28 input rounds (multi-round tool requests, "MRTR").

At 2026-07-28 the server sends the client no requests. When the tool asks something
(`ctx.elicit`, `ctx.sample`, `ctx.list_roots`), the call ends with
`{"resultType": "input_required", "inputRequests": {key: ...}, "requestState": ...}`; the client
answers and sends the call again with `inputResponses` and the `requestState`, and the tool runs
again from the top with its questions now answered. So: ask deterministically, name questions
with `key=`, ask several at once with `ctx.gather`, and keep what must survive the rounds in
`ctx.request_state` (sealed and signed by the server; readable by the client, so no secrets).

    PYTHONPATH=examples jetmcp run input_rounds:app --transport http
    python examples/input_rounds_client.py
"""

import time

from jetmcp import Context, Server

app = Server("input-rounds-example")


@app.tool()
async def plan_trip(city: str, ctx: Context) -> str:
    """Plan a trip: the traveller's name (elicitation), tips (sampling) and the workspace roots."""
    ctx.request_state.setdefault("started", time.time())
    who = await ctx.elicit(
        "Who is travelling?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        key="traveller",
    )
    if who.action != "accept":
        return "No trip."
    # Two questions in one round.
    tips, roots = await ctx.gather(
        ctx.sample(f"Three tips for {city}", max_tokens=100, key="tips"),
        ctx.list_roots(key="roots"),
    )
    took = time.time() - ctx.request_state["started"]
    return (
        f"{who.data['name']} goes to {city}: {tips.text} "
        f"(saved under {roots[0].uri}; planned in {took:.1f}s)"
    )
