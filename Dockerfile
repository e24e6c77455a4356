# syntax=docker/dockerfile:1
# The profile-snapshot CLI as an image: `build`, `serve`, `watch`, `publish` and the rest, the same
# binary as `npm install -g`. See docs/container.md.
#
# The bases are arguments so a machine without a registry can bring its own (the test suite builds
# Debian bookworm bases with the same Node); anyone else builds with the official Node images.
ARG BUILD_BASE=node:26-bookworm
ARG RUNTIME_BASE=node:26-bookworm-slim

FROM ${BUILD_BASE} AS build
WORKDIR /src
# A native module that compiles (better-sqlite3's comes prebuilt) builds against the headers the
# Node image ships, instead of downloading them from nodejs.org (unreachable behind a mirror).
ENV npm_config_nodedir=/usr/local \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
COPY package.json package-lock.json ./
# Registry settings (a mirror, its CA) come in as a build secret, so none of it is left in a layer.
RUN --mount=type=secret,id=npmrc --mount=type=secret,id=npm-ca \
    if [ -s /run/secrets/npmrc ]; then export NPM_CONFIG_USERCONFIG=/run/secrets/npmrc; fi; \
    npm ci
COPY tsconfig.json ./
COPY scripts/copy-js.mjs scripts/
COPY src/ src/
COPY bin/ bin/
COPY contract/ contract/
COPY data/schema.sql data/
RUN npm run compile \
    && npm prune --omit=dev \
    && find build -name '*.map' -delete

FROM ${RUNTIME_BASE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="profile-snapshot" \
      org.opencontainers.image.description="Pre-renders a creator platform's public profile API from its SQLite store as static JSON; serves, publishes and keeps it fresh." \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}"
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/build/ build/
COPY --from=build /src/bin/ bin/
COPY --from=build /src/contract/ contract/
COPY --from=build /src/data/schema.sql data/
# A numeric user, so Kubernetes' runAsNonRoot can check it without reading /etc/passwd. Its home is
# the working folder for the default --db and --out (data/profiles.db, dist): mount volumes there.
RUN ln -s /app/bin/profile-snapshot.js /usr/local/bin/profile-snapshot \
    && mkdir -p /work \
    && chown 10001:10001 /work
USER 10001:10001
WORKDIR /work
ENV NODE_ENV=production
# Exec form: the CLI is PID 1 and gets SIGTERM itself; `serve` and `watch` install their own
# handlers (drain, finish the cycle, exit 0), which a PID 1 needs since the kernel drops signals it
# has no handler for.
ENTRYPOINT ["node", "/app/bin/profile-snapshot.js"]
CMD ["--help"]
# `serve` listens on 3000 by default; `--metrics` (serve and watch) on the port it is given.
EXPOSE 3000
