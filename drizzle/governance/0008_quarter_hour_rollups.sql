-- Issue 19: latency rollups gain a quarter-hour resolution (resolution_s = 900), written beside the
-- minute and hour rows (lib/metrics/rollups.ts saveRollups), so the 24h chart and route table read
-- 96 rows per route instead of 1440 minutes. Kept a week, like the minutes.
-- Here the minute rows already recorded are folded into their quarter hours: counts, sums, the
-- h0..h13 histogram and the by_status codes add exactly. p50/p95/p99_ms stay NULL on these rows:
-- every reader estimates percentiles from the summed histogram, never from those columns.
INSERT INTO `metric_rollups` (`ts`, `resolution_s`, `route`, `count`, `error_count`, `client_error_count`, `sum_ms`, `by_status`, `h0`, `h1`, `h2`, `h3`, `h4`, `h5`, `h6`, `h7`, `h8`, `h9`, `h10`, `h11`, `h12`, `h13`)
SELECT q.`ts`, 900, q.`route`, q.`count`, q.`error_count`, q.`client_error_count`, q.`sum_ms`,
  (SELECT json_group_object(s.`code`, s.`n`) FROM (
     SELECT j.`key` AS `code`, sum(j.`value`) AS `n` FROM `metric_rollups` m, json_each(m.`by_status`) j
     WHERE m.`resolution_s` = 60 AND m.`route` = q.`route` AND m.`ts` >= q.`ts` AND m.`ts` < q.`ts` + 900000
     GROUP BY j.`key` ORDER BY j.`key`) s),
  q.`h0`, q.`h1`, q.`h2`, q.`h3`, q.`h4`, q.`h5`, q.`h6`, q.`h7`, q.`h8`, q.`h9`, q.`h10`, q.`h11`, q.`h12`, q.`h13`
FROM (
  SELECT `ts` - (`ts` % 900000) AS `ts`, `route`, sum(`count`) AS `count`, sum(`error_count`) AS `error_count`, sum(`client_error_count`) AS `client_error_count`, sum(`sum_ms`) AS `sum_ms`, sum(`h0`) AS `h0`, sum(`h1`) AS `h1`, sum(`h2`) AS `h2`, sum(`h3`) AS `h3`, sum(`h4`) AS `h4`, sum(`h5`) AS `h5`, sum(`h6`) AS `h6`, sum(`h7`) AS `h7`, sum(`h8`) AS `h8`, sum(`h9`) AS `h9`, sum(`h10`) AS `h10`, sum(`h11`) AS `h11`, sum(`h12`) AS `h12`, sum(`h13`) AS `h13`
  FROM `metric_rollups` WHERE `resolution_s` = 60 GROUP BY `route`, `ts` - (`ts` % 900000)
) q;
