"""Resources and resource templates: text, JSON, binary, and a template with two variables.

PYTHONPATH=examples jetmcp run resources:app --transport http
python examples/resources_client.py
"""

from jetmcp import McpError, Server
from jetmcp.errors import INVALID_PARAMS

app = Server("resources-example")

BOOKS = {
    "1": {"title": "The Pragmatic Programmer", "year": 1999},
    "2": {"title": "Structure and Interpretation of Computer Programs", "year": 1985},
}


@app.resource("library://catalogue", mime_type="text/markdown")
def catalogue() -> str:
    """Every book, one line each (a str is sent as text)."""
    return "\n".join(f"- {book['title']} ({book['year']})" for book in BOOKS.values())


@app.resource("library://books/{book_id}")
def book(book_id: str) -> dict[str, object]:
    """One book (anything not str or bytes is sent as JSON text)."""
    found = BOOKS.get(book_id)
    if found is None:  # an McpError is answered as is, like the server's own "not found"
        raise McpError(INVALID_PARAMS, f"no book {book_id}", {"uri": f"library://books/{book_id}"})
    return {"id": book_id, **found}


@app.resource("library://books/{book_id}/pages/{page}")
def page(book_id: str, page: int) -> str:
    """A template with two variables; `page` is converted to int from the URI."""
    return f"book {book_id}, page {page}: ..."


@app.resource("library://cover.png", mime_type="image/png")
def cover() -> bytes:
    """A blob (bytes are sent base64-encoded)."""
    return b"\x89PNG\r\n\x1a\n"
