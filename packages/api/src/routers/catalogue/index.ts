import { authedProcedure, createTRPCRouter } from '../../trpc.ts';
import { listCatalogue } from './list.ts';

export const catalogueRouter = createTRPCRouter({
  list: authedProcedure.query(({ ctx }) => listCatalogue({ ctx })),
});
