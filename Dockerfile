# syntax=docker/dockerfile:1
# Caldera's one image: the worker (`python -m worker`, the default command), `caldera
# forwarder`, `caldera webhook` and `caldera codec-server`; deploy/base sets the command of
# each Deployment.
#
#   docker build -t caldera:0.1.0 .
#
# .dockerignore sends only what is copied below; tests/unit/deploy/test_dockerfile.py keeps
# both lists equal to the packages pyproject.toml installs and builds the wheel from them.

# BASE: any image with Python 3.11+ first on PATH as `python` and `pip`, and useradd.
# deploy/image/build.sh builds one from Debian packages where no registry is reachable.
ARG BASE=python:3.12-slim

FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md worker.py ./
COPY activities/ activities/
COPY admission/ admission/
COPY cli/ cli/
COPY controllers/ controllers/
COPY forwarder/ forwarder/
COPY models/ models/
COPY scheduling/ scheduling/
COPY service/ service/
COPY workflows/ workflows/
# Caldera and every dependency as wheels, so the final stage installs offline and keeps no
# build tools.
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${BASE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels caldera \
    && useradd --system --user-group --uid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin caldera
# Numeric, so `runAsNonRoot` can check it without reading /etc/passwd.
USER 10001:10001
WORKDIR /tmp
# webhook (HTTPS), codec server, worker and forwarder metrics
EXPOSE 8443 8081 9464 9465
CMD ["python", "-m", "worker"]
