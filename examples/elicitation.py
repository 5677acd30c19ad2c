"""Elicitation (ask the user) and sampling (ask the client's LLM) from a tool.

The same code serves every revision: on 2025-06-18 and 2025-11-25 the questions are requests the
server sends to the client during the call; on 2026-07-28 they are input rounds (the call ends
with `input_required`, the client answers and retries, and the tool runs again from the top with
its questions answered), so ask deterministically and name each question with `key=`.

    PYTHONPATH=examples jetmcp run elicitation:app --transport http
    python examples/elicitation_client.py
"""

from pydantic import BaseModel, Field

from jetmcp import Context, Server

app = Server("elicitation-example")


class Booking(BaseModel):
    date: str = Field(description="Day of the booking, YYYY-MM-DD")
    guests: int = Field(default=2, ge=1, le=12)


@app.tool()
async def book_table(restaurant: str, ctx: Context) -> str:
    """Book a table: asks the user for the details, then the LLM for a confirmation note."""
    answer = await ctx.elicit(f"Booking at {restaurant}: which day, how many?", Booking, key="when")
    if answer.action != "accept":  # "decline" or "cancel"
        return f"No booking ({answer.action})."
    booking = answer.data
    note = await ctx.sample(
        f"Write one friendly line confirming a table for {booking.guests} on {booking.date}.",
        max_tokens=60,
        key="note",
    )
    return f"Booked {restaurant} on {booking.date} for {booking.guests}. {note.text}"
