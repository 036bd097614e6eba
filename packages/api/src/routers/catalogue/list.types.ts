export interface CatalogueProduct {
  productId: string;
  name: string;
  /** Minor units (cents). */
  unitAmount: number;
  currency: string;
}
