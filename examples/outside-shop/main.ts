// `npm start`: the shop from the environment (see README.md); prints `listening <port>`.
import { bugsFromEnv, startShop } from './shop.ts';

const shop = await startShop({
  databaseUrl: process.env.DATABASE_URL ?? 'postgres://localhost:5432/shop',
  stripeUrl: process.env.STRIPE_URL ?? 'http://127.0.0.1:4100',
  stripeSecretKey: process.env.STRIPE_SECRET_KEY ?? 'sk_test_tenant_a',
  bugs: bugsFromEnv(),
  port: Number(process.env.PORT ?? 3000),
});
console.log(`outside-shop listening ${new URL(shop.url).port}`);
process.on('SIGTERM', () => void shop.stop());
