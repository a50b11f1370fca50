"""Request errors of our servers, and the handlers that answer them with a status code instead of a bare 500.

openenv maps only IndexError (400, Task API routes) and NotImplementedError (501); any other exception a
server raises, such as an unknown split, becomes "500 Internal Server Error" with no text. `TaskRequestError`
and the client's `TaskIndexError` (one class for both sides: the client raises it for a 400, servers raise it
for an index out of range) carry what the caller got wrong; `add_task_error_handlers` answers them 422 and 400
over HTTP. Over /ws openenv sends every exception as an EXECUTION_ERROR frame carrying its message, so the
message names the field and the valid values. No `openenv` import here."""

from __future__ import annotations

from openenv_prime.client.wire.errors import TaskIndexError


class TaskRequestError(ValueError):
    """A caller asked for something that does not exist (an unknown split, a reset argument the
    environment does not take, a tier out of range). `field` names the request field at fault; the
    server answers these with 422 in FastAPI's validation-error format."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


async def _request_error(request, error: TaskRequestError):
    from fastapi.responses import JSONResponse

    detail = [{"type": "value_error", "loc": ["body", error.field], "msg": str(error)}]
    return JSONResponse(status_code=422, content={"detail": detail})


async def _index_error(request, error: TaskIndexError):
    """The Task API routes answer IndexError with 400 themselves; this gives `/reset` the same status."""
    from fastapi.responses import JSONResponse

    return JSONResponse(status_code=400, content={"detail": str(error)})


def add_task_error_handlers(app) -> None:
    """Answer TaskRequestError with 422 and TaskIndexError with 400 on every HTTP route of `app`."""
    app.add_exception_handler(TaskRequestError, _request_error)
    app.add_exception_handler(TaskIndexError, _index_error)
