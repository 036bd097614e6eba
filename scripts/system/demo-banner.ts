import type { RestartPolicy } from './restart-policy.ts';
import type { RunningSystem } from './start-system.ts';

/** What `npm run demo` tells the presenter once every part answers. */
export interface DemoBannerFacts {
  /** Where the data lives, in words ("embedded PostgreSQL, data in ..."). */
  database: string;
  system: Pick<RunningSystem, 'publicWebUrl' | 'processorUrl' | 'operatorCode' | 'host'>;
  apiKeys: Record<string, string>;
  chaos: boolean;
  restart: Pick<RestartPolicy, 'maxRestarts' | 'windowMs'>;
}

/**
 * The launcher's banner. Its URLs are the system's one public origin (`publicWebUrl`), the one
 * the processor sends a 3-D Secure shopper back to, where the session and the checkout are.
 */
export function demoBanner(facts: DemoBannerFacts): string {
  const { system } = facts;
  const loopback = ['127.0.0.1', '::1'].includes(system.host);
  const reach = loopback
    ? `Listening on ${system.host} only (this machine). HOST=0.0.0.0 opens it to the network.`
    : `Listening on ${system.host}: anyone who reaches this machine can open the checkout.`;
  return `
  Once is running on ${facts.database}.

    Checkout    ${system.publicWebUrl}/
    Operator    ${system.publicWebUrl}/ops
    Processor   ${system.processorUrl}  (mock Stripe API; admin at /admin)

    Operator code  ${system.operatorCode}  (the cockpit's demo sign-in asks for it; new at each start)
    API keys       Acme Books     ${facts.apiKeys.ONCE_DEMO_API_KEY_TENANT_A}
                   Globex Coffee  ${facts.apiKeys.ONCE_DEMO_API_KEY_TENANT_B}
                   (REST, GraphQL and the cockpit; new at each start unless ONCE_DEMO_API_KEY_TENANT_A/_B are set)

  ${reach}
  ${facts.chaos ? 'Chaos switches are in the operator cockpit (operator only; --no-chaos turns them off).\n  ' : ''}A part that dies is restarted (backoff; gives up after ${facts.restart.maxRestarts} restarts within ${facts.restart.windowMs / 1000} s).
  Press Ctrl-C to stop.
`;
}

/** The checkout and cockpit URLs a banner prints, read back from its text. */
export function bannerUrls(banner: string): { checkout: string; operator: string } {
  const url = (label: string) => {
    const found = new RegExp(`^\\s*${label}\\s+(http\\S+)`, 'm').exec(banner)?.[1];
    if (!found) throw new Error(`the banner prints no ${label} URL`);
    return found;
  };
  return { checkout: url('Checkout'), operator: url('Operator') };
}
