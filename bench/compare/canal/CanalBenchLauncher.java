import com.alibaba.otter.canal.connector.core.spi.CanalMQProducer;
import com.alibaba.otter.canal.connector.kafka.producer.CanalKafkaProducer;
import com.alibaba.otter.canal.instance.core.CanalMQConfig;
import com.alibaba.otter.canal.instance.manager.CanalInstanceWithManager;
import com.alibaba.otter.canal.instance.manager.model.Canal;
import com.alibaba.otter.canal.instance.manager.model.CanalParameter;
import com.alibaba.otter.canal.server.CanalMQStarter;
import com.alibaba.otter.canal.server.embedded.CanalServerWithEmbedded;
import java.io.FileInputStream;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

/**
 * A canal 1.1.7 server in MQ mode (Kafka, FlatMessage) for bench/compare, built from the
 * Maven Central jars alone.
 *
 * <p>Why not canal's own CanalLauncher: the deployer module (CanalLauncher, CanalController and
 * the Spring XML files its instances are made from) is not published to Maven Central for 1.1.7.
 * This main does what the deployer does in MQ mode, with canal's public classes: one embedded
 * server, one instance of the "manager" flavour (CanalInstanceWithManager, configured by a
 * CanalParameter instead of Spring XML), the Kafka connector's producer and CanalMQStarter, the
 * worker that moves batches from the instance to Kafka and acks them once Kafka has.
 *
 * <p>Every setting comes from one properties file (argument 1) that uses canal's own key names
 * (canal.properties and instance.properties merged); the database password comes from the
 * environment variable CANAL_PASSWORD so that it is never written to disk or logged.
 */
public final class CanalBenchLauncher {

    private CanalBenchLauncher() {}

    /** canal's manager-mode instance does not fill in the MQ settings (topic, partition); the
     * deployer's Spring instances read them from instance.properties. */
    static final class BenchInstance extends CanalInstanceWithManager {
        BenchInstance(Canal canal, String filter, CanalMQConfig mq) {
            super(canal, filter);
            this.mqConfig = mq;
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        String destination = required(props, "canal.destinations");

        CanalMQProducer producer = new CanalKafkaProducer();
        producer.init(props);

        CanalServerWithEmbedded server = CanalServerWithEmbedded.instance();
        CanalMQConfig mq = new CanalMQConfig();
        mq.setTopic(required(props, "canal.mq.topic"));
        mq.setPartition(Integer.valueOf(props.getProperty("canal.mq.partition", "0")));
        Canal canal = canal(props, destination);
        String filter = required(props, "canal.instance.filter.regex");
        server.setCanalInstanceGenerator(name -> new BenchInstance(canal, filter, mq));
        server.start();
        server.start(destination);

        CanalMQStarter starter = new CanalMQStarter(producer);
        starter.start(destination);

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            starter.destroy();
            server.stop();
            stopped.countDown();
        }));
        System.out.println("canal-bench: running destination " + destination);
        stopped.await();
    }

    /** The deployer's instance defaults (canal.properties of 1.1.7), as a CanalParameter. */
    static Canal canal(Properties props, String destination) {
        CanalParameter p = new CanalParameter();
        String[] address = required(props, "canal.instance.master.address").split(":");
        p.setMasterAddress(new InetSocketAddress(address[0], Integer.parseInt(address[1])));
        p.setDbUsername(required(props, "canal.instance.dbUsername"));
        p.setDbPassword(System.getenv("CANAL_PASSWORD"));
        p.setMasterLogfileName(required(props, "canal.instance.master.journal.name"));
        p.setMasterLogfileOffest(Long.valueOf(required(props, "canal.instance.master.position")));
        p.setSlaveId(Long.valueOf(required(props, "canal.instance.mysql.slaveId")));
        p.setConnectionCharset(props.getProperty("canal.instance.connectionCharset", "UTF-8"));
        // The deployer keeps the meta (cursor) in a file, flushed every second, and reads the
        // parser's position from memory, else from that meta (file-instance.xml).
        p.setMetaMode(CanalParameter.MetaMode.LOCAL_FILE);
        p.setDataDir(required(props, "canal.file.data.dir"));
        p.setMetaFileFlushPeriod(Integer.valueOf(props.getProperty("canal.file.flush.period", "1000")));
        p.setIndexMode(CanalParameter.IndexMode.MEMORY_META_FAILBACK);
        p.setStorageMode(CanalParameter.StorageMode.MEMORY);
        p.setMemoryStorageBufferSize(intOf(props, "canal.instance.memory.buffer.size"));
        p.setMemoryStorageBufferMemUnit(intOf(props, "canal.instance.memory.buffer.memunit"));
        p.setStorageBatchMode(
            CanalParameter.BatchMode.valueOf(required(props, "canal.instance.memory.batch.mode")));
        // FlatMessage: entries are kept parsed, not as raw bytes (CanalStarter does the same).
        p.setMemoryStorageRawEntry(Boolean.valueOf(required(props, "canal.instance.memory.rawEntry")));
        p.setTransactionSize(intOf(props, "canal.instance.transaction.size"));
        p.setDetectingEnable(Boolean.valueOf(required(props, "canal.instance.detecting.enable")));
        p.setReceiveBufferSize(intOf(props, "canal.instance.network.receiveBufferSize"));
        p.setSendBufferSize(intOf(props, "canal.instance.network.sendBufferSize"));
        p.setDefaultConnectionTimeoutInSeconds(intOf(props, "canal.instance.network.soTimeout"));
        p.setParallel(Boolean.valueOf(required(props, "canal.instance.parser.parallel")));
        p.setGtidEnable(Boolean.valueOf(props.getProperty("canal.instance.gtidon", "false")));
        p.setTsdbEnable(Boolean.valueOf(required(props, "canal.instance.tsdb.enable")));
        Canal canal = new Canal();
        canal.setId(1L);
        canal.setName(destination);
        canal.setCanalParameter(p);
        return canal;
    }

    static int intOf(Properties props, String key) {
        return Integer.parseInt(required(props, key).trim());
    }

    static String required(Properties props, String key) {
        String value = props.getProperty(key);
        if (value == null || value.trim().isEmpty()) {
            throw new IllegalArgumentException("missing " + key + " in the canal bench properties");
        }
        return value.trim();
    }
}
