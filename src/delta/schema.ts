/**
 * Delta schemas (Spark StructType JSON) and their mapping to and from DuckDB types.
 */

export type PrimitiveType = string; // 'string' | 'long' | 'integer' | ... | 'decimal(p,s)'

export interface StructField {
  name: string;
  type: DataType;
  nullable: boolean;
  metadata: Record<string, unknown>;
}

export interface StructType {
  type: 'struct';
  fields: StructField[];
}

export interface ArrayType {
  type: 'array';
  elementType: DataType;
  containsNull: boolean;
}

export interface MapType {
  type: 'map';
  keyType: DataType;
  valueType: DataType;
  valueContainsNull: boolean;
}

export type DataType = PrimitiveType | StructType | ArrayType | MapType;

/** Parse `metaData.schemaString`. */
export function parseSchema(schemaString: string): StructType {
  const parsed = JSON.parse(schemaString) as StructType;
  if (parsed?.type !== 'struct' || !Array.isArray(parsed.fields)) {
    throw new Error(`schemaString is not a struct type: ${schemaString.slice(0, 200)}`);
  }
  return parsed;
}
