// A GraphQL Yoga server guarded by the installed tarball's Envelop plugin.
// Prints `listening <port>`.
import { createServer } from 'node:http';
import { createIdempotency } from '@once/idempotency';
import { createDrizzleStore } from '@once/idempotency/drizzle';
import { idempotentDirectiveTypeDefs, useIdempotency } from '@once/idempotency/graphql';
import { drizzle } from 'drizzle-orm/postgres-js';
import { createSchema, createYoga } from 'graphql-yoga';
import postgres from 'postgres';
import { answerGate, holdAt } from '../shared-gate.mjs';
import { createTables, payments } from '../tables.js';

const client = postgres(process.env.DATABASE_URL, { max: 5, onnotice: () => {} });
await createTables(client);
const db = drizzle(client);

const yoga = createYoga({
  schema: createSchema({
    typeDefs: /* GraphQL */ `
      ${idempotentDirectiveTypeDefs}
      type Payment { paymentId: Int!, amount: Int! }
      type Query { ok: Boolean }
      type Mutation {
        pay(amount: Int!, gate: String): Payment! @idempotent(operation: "payments.graphql")
      }
    `,
    resolvers: {
      Mutation: {
        pay: async (_, { amount, gate }, context) => {
          if (gate) await holdAt(gate);
          const [payment] = await db
            .insert(payments)
            .values({ tenantId: context.tenantId, amount })
            .returning();
          return { paymentId: payment.id, amount: payment.amount };
        },
      },
    },
  }),
  context: ({ request }) => ({ tenantId: request.headers.get('x-tenant') ?? 'tenant-a' }),
  plugins: [
    // biome-ignore lint/correctness/useHookAtTopLevel: an Envelop plugin (named like its kin), not a React hook
    useIdempotency({
      idempotency: createIdempotency({ store: createDrizzleStore(db) }),
      getTenantId: (context) => context.tenantId,
    }),
  ],
});

const server = createServer((req, res) => {
  const url = new URL(req.url, `http://${req.headers.host}`);
  if (!url.pathname.startsWith('/test/gate')) return yoga(req, res);
  const response = answerGate(url);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  response.text().then((body) => res.end(body));
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
