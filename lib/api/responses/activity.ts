import { activityPageSchema, activitySummaryAnswerSchema } from "../../governance/activity";

/** The activity log's answers, declared in lib/governance/activity.ts. */
export const activityPageResponse = activityPageSchema;
export const activitySummaryResponse = activitySummaryAnswerSchema;
