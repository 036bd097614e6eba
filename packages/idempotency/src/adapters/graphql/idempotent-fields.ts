import {
  type DocumentNode,
  type GraphQLField,
  type GraphQLSchema,
  getOperationAST,
  Kind,
  valueFromASTUntyped,
} from 'graphql';
import type { OperationPolicy } from '../../core/types.ts';

/**
 * How a schema marks a mutation as idempotent: the `@idempotent(operation: "...")` directive
 * in SDL, or `extensions: { idempotency: { operation } }` on a code-first field.
 *
 * @example
 * // SDL: type Mutation { pay(cartId: ID!): Payment! @idempotent(operation: "checkout.pay") }
 * // code-first: { type: Payment, extensions: { idempotency: { operation: 'checkout.pay' } } }
 */
export interface IdempotentFieldConfig extends OperationPolicy {
  operation: string;
  /** Refuse calls without a key. Default true. */
  required?: boolean;
}

/** SDL for the directive, to put in your type definitions. */
export const idempotentDirectiveTypeDefs = /* GraphQL */ `
  directive @idempotent(operation: String!, required: Boolean = true) on FIELD_DEFINITION
`;

function configOf(field: GraphQLField<unknown, unknown>): IdempotentFieldConfig | undefined {
  const fromExtension = (field.extensions as { idempotency?: IdempotentFieldConfig } | undefined)
    ?.idempotency;
  if (fromExtension?.operation) return fromExtension;
  const directive = field.astNode?.directives?.find((d) => d.name.value === 'idempotent');
  if (!directive) return undefined;
  const args = Object.fromEntries(
    (directive.arguments ?? []).map((a) => [a.name.value, valueFromASTUntyped(a.value)]),
  ) as { operation?: string; required?: boolean };
  if (typeof args.operation !== 'string') return undefined;
  return { operation: args.operation, required: args.required !== false };
}

/**
 * The idempotent root fields a mutation document selects (top-level fields only: a key
 * guards one HTTP request, so one such field per request).
 */
export function idempotentFieldsOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
): IdempotentFieldConfig[] {
  const operation = getOperationAST(document, operationName);
  const mutationType = schema.getMutationType();
  if (operation?.operation !== 'mutation' || !mutationType) return [];
  const fields = mutationType.getFields();
  const found: IdempotentFieldConfig[] = [];
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind !== Kind.FIELD) continue;
    const field = fields[selection.name.value];
    const config = field && configOf(field);
    if (config) found.push(config);
  }
  return found;
}
