// The local metastore server schemaflow starts on a project's embedded Derby database
// (schemaflow/catalog/local_server.py): Hive's own metastore handler, the one an embedded client or
// Hive's HiveMetaStore server runs, served over plain Thrift on the loopback address alone. Hive 2.3's
// HiveMetaStore main listens on every interface and has no option to bind one, which would open a
// laptop's metastore to its network with no authentication.
//
// Usage: java -cp <pyspark's jars> LocalMetastore PORT, with the metastore's settings as -D system
// properties (HiveConf reads its variables from them). It prints "serving" once it listens.
import java.net.InetAddress;
import java.net.InetSocketAddress;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;

public final class LocalMetastore {
  private LocalMetastore() {}

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    HiveConf conf = new HiveConf(LocalMetastore.class);
    // Opens the Derby database (failing here if another process holds it) and creates its tables if new.
    ThriftHiveMetastore.Iface handler = HiveMetaStore.newRetryingHMSHandler("local metastore", conf, false);
    TServerSocket socket = new TServerSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    TThreadPoolServer.Args server = new TThreadPoolServer.Args(socket)
        .processor(new ThriftHiveMetastore.Processor<>(handler))
        .protocolFactory(new TBinaryProtocol.Factory())
        .minWorkerThreads(2)
        .maxWorkerThreads(64);
    System.out.println("serving");
    System.out.flush();
    new TThreadPoolServer(server).serve();
  }
}
