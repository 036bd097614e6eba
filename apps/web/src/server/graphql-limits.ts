import {
  type ASTVisitor,
  GraphQLError,
  Kind,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * What one GraphQL document may ask of the server. Introspection's depth is graphql-js's own
 * `MaxIntrospectionDepthRule`, so `__schema` / `__type` subtrees count their fields, not depth.
 */
export const GRAPHQL_LIMITS = {
  /** UTF-8 bytes of the document text, checked before it is parsed. */
  maxDocumentBytes: 16 * 1024,
  maxDepth: 6,
  maxAliases: 15,
  /** Fields selected, each fragment counted wherever it is spread. */
  maxFields: 250,
} as const;

type GraphqlLimitCode =
  | 'graphql_document_too_large'
  | 'graphql_query_too_deep'
  | 'graphql_query_too_complex'
  | 'graphql_introspection_disabled';

function limitError(
  code: GraphqlLimitCode,
  message: string,
  status = 400,
  details?: Record<string, number>,
): GraphQLError {
  // `spec: false`: the status holds for application/json clients too (Yoga answers spec
  // validation errors 200 there), as every other refusal of this API does.
  return new GraphQLError(message, {
    extensions: { code, ...(details ? { details } : {}), http: { status, spec: false } },
  });
}

const INTROSPECTION_ROOTS = new Set(['__schema', '__type']);

interface Measure {
  depth: number;
  fields: number;
  aliases: number;
}

/**
 * Depth, fields and aliases of an operation, fragments counted where spread. Each fragment is
 * measured once, so fragments spreading each other cost their exponential total in the count,
 * not in the time to count.
 */
function measure(
  selectionSet: SelectionSetNode,
  context: ValidationContext,
  fragments: Map<string, Measure | 'measuring'>,
): Measure {
  const total: Measure = { depth: 0, fields: 0, aliases: 0 };
  const add = (part: Measure, depthOffset: number) => {
    total.depth = Math.max(total.depth, part.depth + depthOffset);
    total.fields += part.fields;
    total.aliases += part.aliases;
  };
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      add({ depth: 1, fields: 1, aliases: selection.alias ? 1 : 0 }, 0);
      if (selection.selectionSet) {
        const below = measure(selection.selectionSet, context, fragments);
        add(INTROSPECTION_ROOTS.has(selection.name.value) ? { ...below, depth: 0 } : below, 1);
      }
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      add(measure(selection.selectionSet, context, fragments), 0);
    } else {
      const name = selection.name.value;
      let part = fragments.get(name);
      // A cycle: NoFragmentCycles refuses the document; count nothing more here.
      if (part === 'measuring') continue;
      if (!part) {
        const fragment = context.getFragment(name);
        if (!fragment) continue;
        fragments.set(name, 'measuring');
        part = measure(fragment.selectionSet, context, fragments);
        fragments.set(name, part);
      }
      add(part, 0);
    }
  }
  return total;
}

/** A validation rule (graphql-js `ValidationContext`): depth, alias and field limits per operation. */
export function GraphqlOperationLimits(context: ValidationContext): ASTVisitor {
  const fragments = new Map<string, Measure | 'measuring'>();
  return {
    OperationDefinition(node) {
      const { depth, fields, aliases } = measure(node.selectionSet, context, fragments);
      const { maxDepth, maxAliases, maxFields } = GRAPHQL_LIMITS;
      const checks = [
        ['graphql_query_too_deep', 'depth', depth, maxDepth, `is ${depth} levels deep`],
        ['graphql_query_too_complex', 'aliases', aliases, maxAliases, `has ${aliases} aliases`],
        [
          'graphql_query_too_complex',
          'fields',
          fields,
          maxFields,
          `selects ${fields} fields (fragments counted where spread)`,
        ],
      ] as const;
      for (const [code, measured, value, limit, says] of checks) {
        if (value <= limit) continue;
        const message = `The query ${says}; the limit is ${limit}.`;
        context.reportError(limitError(code, message, 400, { [measured]: value, limit }));
      }
      // Measured whole: nothing below needs visiting by this rule.
      return false;
    },
  };
}

/**
 * graphql-js's `NoSchemaIntrospectionCustomRule`, with a stable code: `__schema` and `__type`
 * are refused, `__typename` is not.
 */
function GraphqlIntrospectionDisabled(context: ValidationContext): ASTVisitor {
  return {
    Field(node) {
      if (INTROSPECTION_ROOTS.has(node.name.value)) {
        context.reportError(
          limitError(
            'graphql_introspection_disabled',
            `Introspection is disabled here ("${node.name.value}").`,
          ),
        );
      }
    },
  };
}

/**
 * The limits as a Yoga plugin: the size before parsing, the rest as validation rules, so a
 * refused document never reaches execution. Four small checks: no dependency to keep pinned.
 */
export function graphqlLimits(options: { introspection: boolean }): Plugin {
  const rules: ValidationRule[] = [GraphqlOperationLimits];
  if (!options.introspection) rules.push(GraphqlIntrospectionDisabled);
  return {
    onParse({ params }) {
      const text = typeof params.source === 'string' ? params.source : params.source.body;
      const bytes = Buffer.byteLength(text, 'utf8');
      if (bytes > GRAPHQL_LIMITS.maxDocumentBytes) {
        throw limitError(
          'graphql_document_too_large',
          `The document is ${bytes} bytes; the limit is ${GRAPHQL_LIMITS.maxDocumentBytes}.`,
          413,
          { bytes, limit: GRAPHQL_LIMITS.maxDocumentBytes },
        );
      }
    },
    onValidate({ addValidationRule }) {
      for (const rule of rules) addValidationRule(rule);
    },
  };
}
