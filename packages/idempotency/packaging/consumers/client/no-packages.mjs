// A module hook: any package the installed @once/idempotency imports fails the run, so the
// browser client is proven to load with no framework (React is installed in this project).
export async function resolve(specifier, context, next) {
  const fromLibrary = context.parentURL?.includes('/node_modules/@once/idempotency/');
  if (fromLibrary && !specifier.startsWith('.')) {
    throw new Error(`@once/idempotency/client imports ${specifier}`);
  }
  return next(specifier, context);
}
