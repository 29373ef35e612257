-- Issue 18: notes people leave beside a dialectic review (not phase messages), and an index so a memory's change history reads its audit rows by target.
CREATE TABLE `dialectic_annotations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`session_id` text NOT NULL,
	`author` text NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `dialectic_sessions`(`session_id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `dialectic_annotations_session_idx` ON `dialectic_annotations` (`session_id`,`created_at`);
--> statement-breakpoint
CREATE INDEX `audit_log_target_idx` ON `audit_log` (`target`,`id`);
