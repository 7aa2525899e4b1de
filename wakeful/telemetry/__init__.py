"""OpenTelemetry traces and metrics with the GenAI semantic conventions.

Wakeful is a library here: it records through the OpenTelemetry *API* and, by default, the
global tracer and meter providers, so a process that configured its own (Langfuse, Logfire,
an OTLP pipeline) gets Wakeful's spans in it. :func:`install_telemetry` sets up an SDK
provider with an exporter only when asked (``otel_exporter``), and only if no global one
is set yet; metrics follow ``OTEL_METRICS_EXPORTER`` (``metrics_exporter``) when it is
given. :func:`setup_telemetry` builds private SDK providers (tests pass an
``InMemorySpanExporter`` / ``InMemoryMetricReader``). The SDK and the OTLP exporter are
optional (``pip install 'wakeful[otlp]'``); only those two functions import them. Nothing
here reads the environment: the worker's settings do.

Spans (names follow the conventions' ``{operation} {target}`` form):

* ``invoke_agent {agent}`` - one wake: written when the wake ends, with the span id
  ``wake_trace`` derives from the wake, so the spans below (given ``wake=``) are its
  children whichever worker recorded them; it hangs where the wake's workflow ran (under
  the span of Temporal's ``RunWorkflow``/``HandleUpdate`` parent) and Temporal's spans of
  the wake's activities hang under it, so workflow, activity and GenAI spans are one tree
  (``wake_trace.wake_scope``);
* ``wakeful.compile {agent}`` - one compile;
* ``wakeful.compile.{stage}`` - each stage of the compile activity, in order:
  ``prepare_wake``, ``load_snapshot``, ``classify_goal``, ``ask_query_sources``,
  ``compile`` (the one above runs within it) and ``record``;
* ``retrieval {data source}`` - the retrieval of past events into a window;
* ``chat {model}`` (kind CLIENT) - one model call: ``gen_ai.provider.name``,
  ``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.response.id``,
  ``gen_ai.usage.input_tokens`` (all input, cached included, as the conventions define
  it), ``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
  ``gen_ai.usage.cache_creation.input_tokens``, ``gen_ai.response.finish_reasons``,
  ``server.address``/``server.port``, plus ``wakeful.cost_usd``;
* ``execute_tool {tool}`` - one tool run (``gen_ai.tool.name``, ``gen_ai.tool.call.id``);
  ``execute_tool delegate`` - a delegation to a child agent, from the call to the merge of
  its result, with the child workflow (and its ``invoke_agent``) beneath it.

Spans of a wake carry ``gen_ai.conversation.id`` (the session id) and ``gen_ai.agent.name``.
Message content (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, tool arguments and results) is recorded only with
``capture_content`` (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``), and
redacted with the project's redaction policy first.

Metrics: ``gen_ai.client.operation.duration`` (histogram, s, per model call),
``gen_ai.client.token.usage`` (histogram by ``gen_ai.token.type``),
``wakeful.cache.tokens`` (counter by ``wakeful.cache.kind``: uncached, read, write_5m,
write_1h), ``wakeful.cache.hit_ratio`` (histogram, read / all input, per call),
``wakeful.window.tokens`` (counter by ``wakeful.bucket``), ``wakeful.compile.evictions``
(counter by bucket and reason) and ``wakeful.cost`` (counter, USD).

The activities record through :class:`Telemetry`; ``Telemetry.disabled()`` records nothing
and costs nothing. Wakes, activities and workflow runs get Temporal's own spans from
:meth:`Telemetry.tracing_interceptor`, which the worker and client install. A wake is one
trace when its agent's workflow was started through a client with that interceptor (the
plugin puts it on the client): Temporal then carries the workflow's trace into every
activity.
"""

from wakeful.telemetry.export import TelemetrySettings, install_telemetry, setup_telemetry
from wakeful.telemetry.genai import server_of
from wakeful.telemetry.recorder import Telemetry

__all__ = [
    "Telemetry",
    "TelemetrySettings",
    "install_telemetry",
    "server_of",
    "setup_telemetry",
]
