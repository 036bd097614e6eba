import {
  type ArgumentNode,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
  getOperationAST,
  Kind,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  valueFromASTUntyped,
} from 'graphql';
import type { OperationPolicy } from '../../core/types.ts';

// Only AST helpers of graphql-js are used here, never its type predicates (isAbstractType,
// TypeInfo, getVariableValues...): those check `instanceof` against their own copy of graphql,
// and a schema built by another copy (ESM next to CJS, two versions) makes them throw, or in
// production answer false. The schema is read by names and plain methods only.

/**
 * How a schema marks a mutation as idempotent: the `@idempotent(operation: "...")` directive
 * in SDL, or `extensions: { idempotency: { operation } }` on a code-first field.
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

/** A root field the operation executes, as the fingerprint sees it. */
interface RootField {
  /** The alias, or the field name: where the result sits in `data`. */
  responseKey: string;
  name: string;
  /**
   * The arguments as written, variables substituted (a variable the request leaves out takes
   * its declared default): what the resolver is asked, before type coercion.
   */
  arguments: Record<string, unknown>;
}

/** A root field marked idempotent, with its config. */
interface GuardedField extends RootField {
  config: IdempotentFieldConfig;
}

/**
 * What a mutation operation executes at its root, found the way execution finds it (the
 * spec's CollectFields: through inline fragments and fragment spreads whose type condition
 * applies to the mutation type, honouring `@skip` and `@include`; one entry per response key,
 * so an alias is another execution, while the same field merged from a fragment is one).
 */
export interface RootSelection {
  guarded: GuardedField[];
  others: RootField[];
  /**
   * Guarded fields the document selects where the guard cannot see them run: below another
   * field, or on a type that has no such field (a document validation would refuse). The guard
   * refuses rather than guess.
   */
  unseen: FieldNode[];
}

/** An `@skip` / `@include` whose `if` the request does not decide (a missing or null variable). */
export class UndecidableDirectiveError extends GraphQLError {}

/** The names of the mutation fields marked idempotent. */
function guardedNamesOf(mutationType: GraphQLObjectType): ReadonlySet<string> {
  return new Set(
    Object.values(mutationType.getFields())
      .filter((field) => configOf(field) !== undefined)
      .map((field) => field.name),
  );
}

/**
 * The root fields a mutation operation executes, or `undefined` when the operation is not a
 * mutation of a schema with guarded fields. Throws {@link UndecidableDirectiveError} when an
 * `@skip` / `@include` cannot be decided from the variables (execution would refuse it too).
 */
export function rootSelectionOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variableValues: Record<string, unknown> | null | undefined,
): RootSelection | undefined {
  const operation = getOperationAST(document, operationName);
  const mutationType = schema.getMutationType();
  if (operation?.operation !== 'mutation' || !mutationType) return undefined;
  const guardedNames = guardedNamesOf(mutationType);
  if (guardedNames.size === 0) return undefined;
  const walk = new Walk(schema, mutationType, document, operation, variableValues ?? {});
  walk.collect(operation.selectionSet);
  walk.mentions(operation.selectionSet, mutationType.name, guardedNames);
  const fields = mutationType.getFields();
  const selection: RootSelection = { guarded: [], others: [], unseen: [] };
  const executed = new Set<FieldNode>();
  for (const [responseKey, nodes] of walk.grouped) {
    for (const node of nodes) executed.add(node);
    const node = nodes[0]!;
    const definition = fields[node.name.value];
    // __typename, or a field validation refuses: nothing of the guard's.
    if (!definition) continue;
    const field = { responseKey, name: node.name.value, arguments: walk.argumentsOf(node) };
    const config = configOf(definition);
    if (config) selection.guarded.push({ ...field, config });
    else selection.others.push(field);
  }
  selection.unseen = walk.mentioned.filter((node) => !executed.has(node));
  return selection;
}

/** One request's walk over its mutation operation. */
class Walk {
  /** CollectFields' result for the mutation type: response key -> field nodes. */
  readonly grouped = new Map<string, FieldNode[]>();
  /** Every guarded-looking field node the operation reaches outside `@skip` / `@include`. */
  readonly mentioned: FieldNode[] = [];
  readonly #fragments = new Map<string, FragmentDefinitionNode>();
  /** The request's variables, with the declared defaults of those it leaves out. */
  readonly #values: Record<string, unknown>;

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly mutationType: GraphQLObjectType,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Record<string, unknown>,
  ) {
    for (const definition of document.definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) {
        this.#fragments.set(definition.name.value, definition);
      }
    }
    const defaults = (operation.variableDefinitions ?? []).flatMap((definition) =>
      definition.defaultValue
        ? [[definition.variable.name.value, valueFromASTUntyped(definition.defaultValue)]]
        : [],
    );
    this.#values = { ...Object.fromEntries(defaults), ...variables };
  }

  /** CollectFields (GraphQL spec, "Field Collection"), as graphql-js's internal collectFields. */
  collect(selectionSet: SelectionSetNode, visited = new Set<string>()): void {
    for (const selection of selectionSet.selections) {
      if (!this.included(selection)) continue;
      if (selection.kind === Kind.FIELD) {
        const responseKey = selection.alias?.value ?? selection.name.value;
        const group = this.grouped.get(responseKey);
        if (group) group.push(selection);
        else this.grouped.set(responseKey, [selection]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (this.applies(selection.typeCondition?.name.value)) {
          this.collect(selection.selectionSet, visited);
        }
      } else {
        const name = selection.name.value;
        if (visited.has(name)) continue;
        visited.add(name);
        const fragment = this.#fragments.get(name);
        if (fragment && this.applies(fragment.typeCondition.name.value)) {
          this.collect(fragment.selectionSet, visited);
        }
      }
    }
  }

  /**
   * Every field named like a guarded one whose parent is the mutation type or a type without
   * such a field, anywhere below `selectionSet` (fragments followed once per parent type).
   */
  mentions(
    selectionSet: SelectionSetNode,
    parent: string | undefined,
    guardedNames: ReadonlySet<string>,
    visited = new Set<string>(),
  ): void {
    for (const selection of selectionSet.selections) {
      if (!this.included(selection)) continue;
      if (selection.kind === Kind.FIELD) {
        const fields = this.fieldsOf(parent);
        const field = fields?.[selection.name.value];
        if (
          guardedNames.has(selection.name.value) &&
          (parent === this.mutationType.name || !field)
        ) {
          this.mentioned.push(selection);
        }
        if (selection.selectionSet) {
          this.mentions(selection.selectionSet, namedTypeOf(field?.type), guardedNames, visited);
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const on = selection.typeCondition?.name.value ?? parent;
        this.mentions(selection.selectionSet, on, guardedNames, visited);
      } else {
        const fragment = this.#fragments.get(selection.name.value);
        if (!fragment || visited.has(fragment.name.value)) continue;
        visited.add(fragment.name.value);
        this.mentions(
          fragment.selectionSet,
          fragment.typeCondition.name.value,
          guardedNames,
          visited,
        );
      }
    }
  }

  argumentsOf(node: FieldNode): Record<string, unknown> {
    return Object.fromEntries(
      (node.arguments ?? []).map((argument: ArgumentNode) => [
        argument.name.value,
        valueFromASTUntyped(argument.value, this.#values),
      ]),
    );
  }

  /** `@skip(if:)` wins over `@include(if:)` (graphql-js's shouldIncludeNode). */
  included(node: SelectionNode): boolean {
    if (this.#condition(node, 'skip') === true) return false;
    return this.#condition(node, 'include') !== false;
  }

  #condition(node: SelectionNode, name: 'skip' | 'include'): boolean | undefined {
    const directive = node.directives?.find((d: DirectiveNode) => d.name.value === name);
    if (!directive) return undefined;
    const value = directive.arguments?.find((a) => a.name.value === 'if')?.value;
    if (value?.kind === Kind.BOOLEAN) return value.value;
    if (value?.kind === Kind.VARIABLE) {
      const decided = this.#values[value.name.value];
      if (typeof decided === 'boolean') return decided;
    }
    throw new UndecidableDirectiveError(
      `@${name} without a true or false "if" (a variable left out or null)`,
      { nodes: directive },
    );
  }

  /** DoesFragmentTypeApply for the mutation (object) type, by names. */
  applies(typeCondition: string | undefined): boolean {
    if (typeCondition === undefined || typeCondition === this.mutationType.name) return true;
    const type = this.schema.getType(typeCondition);
    if (type && 'getTypes' in type) {
      return type.getTypes().some((member) => member.name === this.mutationType.name);
    }
    return this.mutationType.getInterfaces().some((i) => i.name === typeCondition);
  }

  fieldsOf(
    typeName: string | undefined,
  ): Record<string, GraphQLField<unknown, unknown>> | undefined {
    const type = typeName === undefined ? undefined : this.schema.getType(typeName);
    return type && 'getFields' in type
      ? (type.getFields() as Record<string, GraphQLField<unknown, unknown>>)
      : undefined;
  }
}

/** The named type under lists and non-nulls, read structurally. */
function namedTypeOf(type: unknown): string | undefined {
  let current = type as { ofType?: unknown; name?: string } | undefined;
  while (current && 'ofType' in current && current.ofType)
    current = current.ofType as typeof current;
  return current?.name;
}
