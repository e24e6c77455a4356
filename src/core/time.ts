/** A day in milliseconds: account ages are whole days since creation (docs/store.md). */
export const DAY_MS = 86_400_000;
