-- Unchanged-reindex stat check (issue 19): besides size and mtime, a file's ctime and inode must match
-- what they were when its content was last read and hashed before a reindex skips reading it. A file
-- replaced by another (a rename over it, an editor's atomic save, a time-preserving copy) has a new
-- inode or ctime even when its size and mtime are the same. Rows from before this migration have
-- neither (null): their next reindex reads and hashes them once and records both.
ALTER TABLE `documents` ADD `ctime` integer;
--> statement-breakpoint
ALTER TABLE `documents` ADD `inode` integer;
