/** Registers the trace and learning embeddable kinds (imported by lib/embed/kinds.ts). */
import "./traces";
import "./learnings";
