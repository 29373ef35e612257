/** `npm run test:e2e` and `npm test`: build the production bundle and the CLI's unless they are as new as their sources (a run's earlier suites built them). */
import { ensureProductionBuild } from "./build-freshness";

ensureProductionBuild();
