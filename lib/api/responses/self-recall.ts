import { exact } from "./common";
import { evaluationJobSchema, selfRecallReportSchema } from "../../eval/report";

/** Wire forms of self-recall: the report (runs, trend, schedule) and evaluation jobs, each declared in lib/eval/report.ts. */
export const evaluationJob = evaluationJobSchema;
export const evaluationJobResponse = exact({ job: evaluationJob });
/** Starting an evaluation answers with its job. */
export const evaluateStartResponse = evaluationJobResponse;
export const selfRecallResponse = selfRecallReportSchema;
