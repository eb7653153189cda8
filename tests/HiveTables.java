// Tables made on a Hive 4 metastore server by Hive 4's own client, as a team's Hive or Spark (with its Hive 4
// client) leaves them: database args[1] with a partitioned Parquet table `orders` and a view `big_orders` over it,
// on the server at args[0]. Run from tests/test_metastore_releases.py with Java's source launcher.
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

public class HiveTables {
    public static void main(String[] args) throws Exception {
        Configuration conf = MetastoreConf.newMetastoreConf();
        MetastoreConf.setVar(conf, MetastoreConf.ConfVars.THRIFT_URIS, args[0]);
        HiveMetaStoreClient client = new HiveMetaStoreClient(conf);
        String db = args[1];
        client.createDatabase(new Database(db, "", null, new HashMap<>()));
        List<FieldSchema> columns = List.of(new FieldSchema("id", "bigint", null),
                                            new FieldSchema("amount", "decimal(10,2)", "in euros"));
        client.createTable(table(db, "orders", "EXTERNAL_TABLE", columns, List.of(new FieldSchema("dt", "string", null)),
                new SerDeInfo(null, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", Map.of()),
                "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"));
        Table view = table(db, "big_orders", "VIRTUAL_VIEW", List.of(new FieldSchema("id", "bigint", null)), List.of(),
                new SerDeInfo(), null, null);
        view.setViewOriginalText("SELECT id FROM " + db + ".orders WHERE amount > 100");
        view.setViewExpandedText("SELECT `orders`.`id` FROM `" + db + "`.`orders` WHERE `orders`.`amount` > 100");
        client.createTable(view);
        client.close();
    }

    static Table table(String db, String name, String type, List<FieldSchema> columns, List<FieldSchema> keys,
                       SerDeInfo serde, String input, String output) {
        StorageDescriptor sd = new StorageDescriptor();
        sd.setCols(columns);
        sd.setSerdeInfo(serde);
        sd.setInputFormat(input);
        sd.setOutputFormat(output);
        Table table = new Table();
        table.setDbName(db);
        table.setTableName(name);
        table.setTableType(type);
        table.setSd(sd);
        table.setPartitionKeys(keys);
        table.setParameters(new HashMap<>(type.equals("EXTERNAL_TABLE") ? Map.of("EXTERNAL", "TRUE") : Map.of()));
        return table;
    }
}
