# tidemark in a container: `docker build -t tidemark .`, then
#   docker run --rm -v "$PWD:/config:ro" -e AWS_REGION -e AWS_ACCESS_KEY_ID -e AWS_SECRET_ACCESS_KEY \
#     tidemark run --config /config/tidemark.yaml --json
# The entrypoint is `tidemark`; arguments are its command line. Exit codes are tidemark's
# (0 done, 1 failed, 2 usage/config, 3 lost commit race, 4 storage unavailable, 130 interrupted:
# SIGTERM from `docker stop` or a Kubernetes eviction stops between steps and exits 130).

# Build stage: install everything from the lock file (`npm ci` runs `prepare`, which compiles
# src/ into dist/), then drop the dev dependencies.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

# Run stage: the compiled code and production dependencies only.
FROM node:20-slim
ENV NODE_ENV=production \
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY package.json LICENSE README.md tidemark.schema.json ./
RUN ln -s /app/bin/tidemark.js /usr/local/bin/tidemark
# Scratch files (downloads, DuckDB spill) go to $TMPDIR; mount a volume there for big batches.
USER node
WORKDIR /home/node
ENTRYPOINT ["tidemark"]
CMD ["--help"]
