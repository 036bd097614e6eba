// @once/api/errors: the API's refusals and their one mapping to each transport.

export {
  API_PROBLEM_TYPE_BASE,
  ApiError,
  apiErrorCatalogue,
  isApiError,
} from './api-error.ts';
export {
  apiErrorToTRPC,
  apiProblemResponse,
  refusalOf,
  toProblemResponse,
} from './to-transport-error.ts';
