-- A store's lifecycle (created, archived, unarchived, deleted) is its last such row in the audit log
-- (lib/db/store-lifecycle.ts). This partial index holds those rows only, so "is store x archived" is one
-- seek however many other rows (file changes, jobs) name store:x, and audit writes pay nothing for it.
CREATE INDEX `audit_log_store_lifecycle_idx` ON `audit_log` (`target`,`id`) WHERE `action` IN ('store.create', 'store.delete', 'store.archive', 'store.unarchive');
