// What Iceberg's own Java library reads of a table in a Hive metastore: the oracle the tests compare
// schemaflow's commits (made through pyiceberg) with. Run as a single-file program on Iceberg's Spark
// runtime jar and pyspark's jars (Hadoop, the Hive metastore client):
//   java -cp <runtime.jar>:<pyspark jars>/* tests/IcebergRead.java thrift://host:port db.table
// Prints one line each: "schema <json>", "spec <json>", "sort <json>", "property <key>=<value>" (sorted),
// "snapshots <count>", then "row <record>" for each row, sorted.
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.SortOrderParser;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hive.HiveCatalog;
import org.apache.iceberg.io.CloseableIterable;

public class IcebergRead {
    public static void main(String[] args) throws Exception {
        HiveCatalog catalog = new HiveCatalog();
        catalog.setConf(new Configuration());
        catalog.initialize("hive", Map.of("uri", args[0]));
        String[] name = args[1].split("\\.", 2);
        Table table = catalog.loadTable(TableIdentifier.of(name[0], name[1]));
        System.out.println("schema " + SchemaParser.toJson(table.schema()));
        System.out.println("spec " + PartitionSpecParser.toJson(table.spec()));
        System.out.println("sort " + SortOrderParser.toJson(table.sortOrder()));
        for (Map.Entry<String, String> property : new TreeMap<>(table.properties()).entrySet()) {
            System.out.println("property " + property.getKey() + "=" + property.getValue());
        }
        int snapshots = 0;
        for (Object ignored : table.snapshots()) {
            snapshots++;
        }
        System.out.println("snapshots " + snapshots);
        List<String> rows = new ArrayList<>();
        try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
            for (Record record : records) {
                rows.add("row " + record);
            }
        }
        rows.sort(null);
        rows.forEach(System.out::println);
        catalog.close();
    }
}
