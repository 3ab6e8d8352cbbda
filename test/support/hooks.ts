import { stopPostgres } from './postgres.js';

/** Mocha root hooks: shared servers started lazily by tests are stopped once at the end. */
export const mochaHooks = {
  async afterAll() {
    await stopPostgres();
  },
};
