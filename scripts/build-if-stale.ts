/** `npm run test:e2e`: build the production bundle unless the one in .next is as new as the sources (a run's earlier suites built it). */
import { ensureProductionBuild } from "./build-freshness";

ensureProductionBuild();
