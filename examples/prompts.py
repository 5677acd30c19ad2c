"""Prompts, and completion of their arguments (and of resource template variables).

PYTHONPATH=examples jetmcp run prompts:app --transport http
python examples/prompts_client.py
"""

from jetmcp.server import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
    Server,
)

app = Server("prompts-example")

LANGUAGES = ["python", "rust", "ruby", "go", "typescript"]
FRAMEWORKS = {"python": ["django", "fastapi", "flask"], "rust": ["axum", "actix-web"]}


@app.prompt(title="Explain some code")
def explain(language: str, snippet: str) -> str:
    """Ask for an explanation of a snippet."""
    return f"Explain this {language} code, line by line:\n\n{snippet}"


@app.prompt()
def scaffold(language: str, framework: str) -> list[dict[str, object]]:
    """A conversation in two messages (dicts with role and content)."""
    return [
        {"role": "user", "content": f"Start a {framework} project in {language}."},
        {"role": "assistant", "content": "Which features does it need?"},
    ]


@app.resource("docs://{language}/index")
def language_docs(language: str) -> str:
    return f"The {language} documentation."


@app.completion()
def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> list[str] | Completion | None:
    if argument.name == "language":
        return [name for name in LANGUAGES if name.startswith(argument.value)]
    if argument.name == "framework":
        # The arguments already given (2025-06-18 on) narrow the answer.
        language = context.arguments.get("language", "") if context else ""
        options = [f for f in FRAMEWORKS.get(language, []) if f.startswith(argument.value)]
        return Completion(values=options, total=len(options), has_more=False)
    return None
