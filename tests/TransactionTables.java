// The Hive metastore's transaction tables (TXNS, HIVE_LOCKS, NEXT_LOCK_ID, ...), created in the database at
// args[0] (JDBC URL; driver args[1], user args[2]) as Hive's own tests create them: what the metastore's lock
// calls need, as production metastores have them. Run from tests/metastore_server.py with Java's source launcher.
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;

public class TransactionTables {
    public static void main(String[] args) throws Exception {
        HiveConf conf = new HiveConf();
        conf.set("javax.jdo.option.ConnectionURL", args[0]);
        conf.set("javax.jdo.option.ConnectionDriverName", args[1]);
        conf.set("javax.jdo.option.ConnectionUserName", args[2]);
        conf.set("javax.jdo.option.ConnectionPassword", "");
        TxnDbUtil.prepDb(conf);
    }
}
