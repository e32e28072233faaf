/**
 * A data file the engine wrote for a commit.
 */
import type { DataFileDescription } from '../delta/file-actions.js';

/** One data file written locally, ready to upload and to describe in an `add` action. */
export interface WrittenFile extends DataFileDescription {
  /** The file on local disk. */
  localPath: string;
  /** Object key relative to the table root: Hive folders (Spark-escaped) plus the file name. */
  relativePath: string;
}
