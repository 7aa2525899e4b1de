# The Wakeful image: one image for the worker and the webhook ingress.
#
#   docker build -t wakeful .
#   docker run --rm wakeful --help
#
# Agents are Python code: build your own image FROM this one, copy your package in and point
# the worker at it (WAKEFUL_AGENTS=mypackage.agents:registry). The embedded servers are not
# installed: in a container every piece (Postgres, Temporal, Qdrant) is configured by URL.

FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY wakeful ./wakeful
# Wheels for Wakeful and every dependency, plus the OTLP exporter the compose file's
# collector receives from.
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[otlp]"

FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    WAKEFUL_STATE_DIR=/var/lib/wakeful \
    WAKEFUL_INGRESS_HOST=0.0.0.0 \
    WAKEFUL_INGRESS_PORT=8080
RUN useradd --system --uid 10001 --create-home --home-dir /var/lib/wakeful wakeful
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels "wakeful[otlp]" \
    && rm -rf /wheels
USER wakeful
WORKDIR /var/lib/wakeful
EXPOSE 8080
ENTRYPOINT ["wakeful"]
CMD ["--help"]
