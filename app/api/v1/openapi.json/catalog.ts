/**
 * Every /api/v1 route module, for the OpenAPI document. A test fails when a
 * route file is missing here, so the document cannot silently lose one.
 */
import type { RouteModule } from "@/lib/api/openapi";
import * as activity from "@/app/api/v1/activity/route";
import * as activitySummary from "@/app/api/v1/activity/summary/route";
import * as dialecticExport from "@/app/api/v1/dialectic/export/route";
import * as dialecticMetrics from "@/app/api/v1/dialectic/metrics/route";
import * as dialecticRestore from "@/app/api/v1/dialectic/restore/route";
import * as dialecticSessionsIdAbandon from "@/app/api/v1/dialectic/sessions/[id]/abandon/route";
import * as dialecticSessionsIdClaim from "@/app/api/v1/dialectic/sessions/[id]/claim/route";
import * as dialecticSessionsIdExport from "@/app/api/v1/dialectic/sessions/[id]/export/route";
import * as dialecticSessionsIdMessages from "@/app/api/v1/dialectic/sessions/[id]/messages/route";
import * as dialecticSessionsId from "@/app/api/v1/dialectic/sessions/[id]/route";
import * as dialecticSessionsIdVerify from "@/app/api/v1/dialectic/sessions/[id]/verify/route";
import * as dialecticSessions from "@/app/api/v1/dialectic/sessions/route";
import * as dialecticSweep from "@/app/api/v1/dialectic/sweep/route";
import * as health from "@/app/api/v1/health/route";
import * as jobsId from "@/app/api/v1/jobs/[id]/route";
import * as overrides from "@/app/api/v1/overrides/route";
import * as provenance from "@/app/api/v1/provenance/route";
import * as storesStoreCategories from "@/app/api/v1/stores/[store]/categories/route";
import * as storesStoreChainsId from "@/app/api/v1/stores/[store]/chains/[id]/route";
import * as storesStoreChains from "@/app/api/v1/stores/[store]/chains/route";
import * as storesStoreChunksId from "@/app/api/v1/stores/[store]/chunks/[id]/route";
import * as storesStoreDocuments from "@/app/api/v1/stores/[store]/documents/route";
import * as storesStoreEmbeddingsRetryParked from "@/app/api/v1/stores/[store]/embeddings/retry-parked/route";
import * as storesStoreEvaluate from "@/app/api/v1/stores/[store]/evaluate/route";
import * as storesStoreEvaluateJobsId from "@/app/api/v1/stores/[store]/evaluate/jobs/[id]/route";
import * as storesStoreEvidence from "@/app/api/v1/stores/[store]/evidence/route";
import * as storesStoreFramesId from "@/app/api/v1/stores/[store]/frames/[id]/route";
import * as storesStoreFrames from "@/app/api/v1/stores/[store]/frames/route";
import * as storesStoreHealth from "@/app/api/v1/stores/[store]/health/route";
import * as storesStoreItemsKindIdHistory from "@/app/api/v1/stores/[store]/items/[kind]/[id]/history/route";
import * as storesStoreContradictions from "@/app/api/v1/stores/[store]/contradictions/route";
import * as storesStoreItemsKindIdInvalidate from "@/app/api/v1/stores/[store]/items/[kind]/[id]/invalidate/route";
import * as storesStoreItemsKindIdRestore from "@/app/api/v1/stores/[store]/items/[kind]/[id]/restore/route";
import * as storesStorePolicyWrite from "@/app/api/v1/stores/[store]/policy/write/route";
import * as storesStoreProposals from "@/app/api/v1/stores/[store]/proposals/route";
import * as storesStoreProposalsKindIdApprove from "@/app/api/v1/stores/[store]/proposals/[kind]/[id]/approve/route";
import * as storesStoreProposalsKindIdReject from "@/app/api/v1/stores/[store]/proposals/[kind]/[id]/reject/route";
import * as storesStoreProposalsKindIdDialectic from "@/app/api/v1/stores/[store]/proposals/[kind]/[id]/dialectic/route";
import * as storesStoreLearningsId from "@/app/api/v1/stores/[store]/learnings/[id]/route";
import * as storesStoreLearnings from "@/app/api/v1/stores/[store]/learnings/route";
import * as storesStoreMemories from "@/app/api/v1/stores/[store]/memories/route";
import * as storesStoreMemoriesTrash from "@/app/api/v1/stores/[store]/memories/trash/route";
import * as storesStoreNodesId from "@/app/api/v1/stores/[store]/nodes/[id]/route";
import * as storesStoreNodes from "@/app/api/v1/stores/[store]/nodes/route";
import * as storesStorePolicyForget from "@/app/api/v1/stores/[store]/policy/forget/route";
import * as storesStorePolicyForgetRun from "@/app/api/v1/stores/[store]/policy/forget/run/route";
import * as storesStorePolicyForgetRuns from "@/app/api/v1/stores/[store]/policy/forget/runs/route";
import * as storesStoreRecall from "@/app/api/v1/stores/[store]/recall/route";
import * as storesStoreReembedCompare from "@/app/api/v1/stores/[store]/reembed/compare/route";
import * as storesStoreReembed from "@/app/api/v1/stores/[store]/reembed/route";
import * as storesStoreReembedSwitch from "@/app/api/v1/stores/[store]/reembed/switch/route";
import * as storesStoreReflection from "@/app/api/v1/stores/[store]/reflection/route";
import * as storesStoreReindex from "@/app/api/v1/stores/[store]/reindex/route";
import * as storesStoreRelationsId from "@/app/api/v1/stores/[store]/relations/[id]/route";
import * as storesStoreRelations from "@/app/api/v1/stores/[store]/relations/route";
import * as storesStoreRemember from "@/app/api/v1/stores/[store]/remember/route";
import * as storesStore from "@/app/api/v1/stores/[store]/route";
import * as storesStoreArchive from "@/app/api/v1/stores/[store]/archive/route";
import * as storesStoreUnarchive from "@/app/api/v1/stores/[store]/unarchive/route";
import * as storesStoreSearch from "@/app/api/v1/stores/[store]/search/route";
import * as storesStoreThoughtsIdFeedback from "@/app/api/v1/stores/[store]/thoughts/[id]/feedback/route";
import * as storesStoreThoughtsId from "@/app/api/v1/stores/[store]/thoughts/[id]/route";
import * as storesStoreThoughts from "@/app/api/v1/stores/[store]/thoughts/route";
import * as storesStoreTracesId from "@/app/api/v1/stores/[store]/traces/[id]/route";
import * as storesStoreTraces from "@/app/api/v1/stores/[store]/traces/route";
import * as storesStoreVerify from "@/app/api/v1/stores/[store]/verify/route";
import * as storesStoreWorkingMemoryKey from "@/app/api/v1/stores/[store]/working-memory/[key]/route";
import * as storesStoreWorkingMemory from "@/app/api/v1/stores/[store]/working-memory/route";
import * as stores from "@/app/api/v1/stores/route";
import * as tasksId from "@/app/api/v1/tasks/[id]/route";
import * as tasksIdRunsRunIdFinish from "@/app/api/v1/tasks/[id]/runs/[runId]/finish/route";
import * as tasksIdRuns from "@/app/api/v1/tasks/[id]/runs/route";
import * as tasksIdValidations from "@/app/api/v1/tasks/[id]/validations/route";
import * as tasks from "@/app/api/v1/tasks/route";
import * as tokensId from "@/app/api/v1/tokens/[id]/route";
import * as tokens from "@/app/api/v1/tokens/route";

export const ROUTE_MODULES: Record<string, RouteModule> = {
  "app/api/v1/activity/route.ts": activity,
  "app/api/v1/activity/summary/route.ts": activitySummary,
  "app/api/v1/dialectic/export/route.ts": dialecticExport,
  "app/api/v1/dialectic/metrics/route.ts": dialecticMetrics,
  "app/api/v1/dialectic/restore/route.ts": dialecticRestore,
  "app/api/v1/dialectic/sessions/[id]/abandon/route.ts": dialecticSessionsIdAbandon,
  "app/api/v1/dialectic/sessions/[id]/claim/route.ts": dialecticSessionsIdClaim,
  "app/api/v1/dialectic/sessions/[id]/export/route.ts": dialecticSessionsIdExport,
  "app/api/v1/dialectic/sessions/[id]/messages/route.ts": dialecticSessionsIdMessages,
  "app/api/v1/dialectic/sessions/[id]/route.ts": dialecticSessionsId,
  "app/api/v1/dialectic/sessions/[id]/verify/route.ts": dialecticSessionsIdVerify,
  "app/api/v1/dialectic/sessions/route.ts": dialecticSessions,
  "app/api/v1/dialectic/sweep/route.ts": dialecticSweep,
  "app/api/v1/health/route.ts": health,
  "app/api/v1/jobs/[id]/route.ts": jobsId,
  "app/api/v1/overrides/route.ts": overrides,
  "app/api/v1/provenance/route.ts": provenance,
  "app/api/v1/stores/[store]/categories/route.ts": storesStoreCategories,
  "app/api/v1/stores/[store]/chains/[id]/route.ts": storesStoreChainsId,
  "app/api/v1/stores/[store]/chains/route.ts": storesStoreChains,
  "app/api/v1/stores/[store]/chunks/[id]/route.ts": storesStoreChunksId,
  "app/api/v1/stores/[store]/documents/route.ts": storesStoreDocuments,
  "app/api/v1/stores/[store]/embeddings/retry-parked/route.ts": storesStoreEmbeddingsRetryParked,
  "app/api/v1/stores/[store]/evaluate/route.ts": storesStoreEvaluate,
  "app/api/v1/stores/[store]/evaluate/jobs/[id]/route.ts": storesStoreEvaluateJobsId,
  "app/api/v1/stores/[store]/evidence/route.ts": storesStoreEvidence,
  "app/api/v1/stores/[store]/frames/[id]/route.ts": storesStoreFramesId,
  "app/api/v1/stores/[store]/frames/route.ts": storesStoreFrames,
  "app/api/v1/stores/[store]/health/route.ts": storesStoreHealth,
  "app/api/v1/stores/[store]/items/[kind]/[id]/history/route.ts": storesStoreItemsKindIdHistory,
  "app/api/v1/stores/[store]/contradictions/route.ts": storesStoreContradictions,
  "app/api/v1/stores/[store]/items/[kind]/[id]/invalidate/route.ts": storesStoreItemsKindIdInvalidate,
  "app/api/v1/stores/[store]/items/[kind]/[id]/restore/route.ts": storesStoreItemsKindIdRestore,
  "app/api/v1/stores/[store]/policy/write/route.ts": storesStorePolicyWrite,
  "app/api/v1/stores/[store]/proposals/route.ts": storesStoreProposals,
  "app/api/v1/stores/[store]/proposals/[kind]/[id]/approve/route.ts": storesStoreProposalsKindIdApprove,
  "app/api/v1/stores/[store]/proposals/[kind]/[id]/reject/route.ts": storesStoreProposalsKindIdReject,
  "app/api/v1/stores/[store]/proposals/[kind]/[id]/dialectic/route.ts": storesStoreProposalsKindIdDialectic,
  "app/api/v1/stores/[store]/learnings/[id]/route.ts": storesStoreLearningsId,
  "app/api/v1/stores/[store]/learnings/route.ts": storesStoreLearnings,
  "app/api/v1/stores/[store]/memories/route.ts": storesStoreMemories,
  "app/api/v1/stores/[store]/memories/trash/route.ts": storesStoreMemoriesTrash,
  "app/api/v1/stores/[store]/nodes/[id]/route.ts": storesStoreNodesId,
  "app/api/v1/stores/[store]/nodes/route.ts": storesStoreNodes,
  "app/api/v1/stores/[store]/policy/forget/route.ts": storesStorePolicyForget,
  "app/api/v1/stores/[store]/policy/forget/run/route.ts": storesStorePolicyForgetRun,
  "app/api/v1/stores/[store]/policy/forget/runs/route.ts": storesStorePolicyForgetRuns,
  "app/api/v1/stores/[store]/recall/route.ts": storesStoreRecall,
  "app/api/v1/stores/[store]/reembed/compare/route.ts": storesStoreReembedCompare,
  "app/api/v1/stores/[store]/reembed/route.ts": storesStoreReembed,
  "app/api/v1/stores/[store]/reembed/switch/route.ts": storesStoreReembedSwitch,
  "app/api/v1/stores/[store]/reflection/route.ts": storesStoreReflection,
  "app/api/v1/stores/[store]/reindex/route.ts": storesStoreReindex,
  "app/api/v1/stores/[store]/relations/[id]/route.ts": storesStoreRelationsId,
  "app/api/v1/stores/[store]/relations/route.ts": storesStoreRelations,
  "app/api/v1/stores/[store]/remember/route.ts": storesStoreRemember,
  "app/api/v1/stores/[store]/route.ts": storesStore,
  "app/api/v1/stores/[store]/archive/route.ts": storesStoreArchive,
  "app/api/v1/stores/[store]/unarchive/route.ts": storesStoreUnarchive,
  "app/api/v1/stores/[store]/search/route.ts": storesStoreSearch,
  "app/api/v1/stores/[store]/thoughts/[id]/feedback/route.ts": storesStoreThoughtsIdFeedback,
  "app/api/v1/stores/[store]/thoughts/[id]/route.ts": storesStoreThoughtsId,
  "app/api/v1/stores/[store]/thoughts/route.ts": storesStoreThoughts,
  "app/api/v1/stores/[store]/traces/[id]/route.ts": storesStoreTracesId,
  "app/api/v1/stores/[store]/traces/route.ts": storesStoreTraces,
  "app/api/v1/stores/[store]/verify/route.ts": storesStoreVerify,
  "app/api/v1/stores/[store]/working-memory/[key]/route.ts": storesStoreWorkingMemoryKey,
  "app/api/v1/stores/[store]/working-memory/route.ts": storesStoreWorkingMemory,
  "app/api/v1/stores/route.ts": stores,
  "app/api/v1/tasks/[id]/route.ts": tasksId,
  "app/api/v1/tasks/[id]/runs/[runId]/finish/route.ts": tasksIdRunsRunIdFinish,
  "app/api/v1/tasks/[id]/runs/route.ts": tasksIdRuns,
  "app/api/v1/tasks/[id]/validations/route.ts": tasksIdValidations,
  "app/api/v1/tasks/route.ts": tasks,
  "app/api/v1/tokens/[id]/route.ts": tokensId,
  "app/api/v1/tokens/route.ts": tokens,
};
